-- Sign-in documents of internal/auth that replicas share, one row per name:
-- 'registrations' (the OAuth clients mcpwrap registered, as JSON) and, when
-- $MCPWRAP_STORE_KEY is set, 'signins' (tokens and registrations, sealed
-- with AES-256-GCM by mcpwrap before they reach the database). Rows are
-- never deleted, so that an update can always lock its row.
CREATE TABLE mcpwrap_auth (
    name       text PRIMARY KEY,
    doc        bytea,
    revision   bigint NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now()
);
