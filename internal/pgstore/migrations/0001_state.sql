-- One row per server: its state as the document internal/state renders
-- (the file store's file, byte for byte), NULL once the state is empty.
-- Rows are never deleted, so that an update can always lock its row.
CREATE TABLE mcpwrap_state (
    server     text PRIMARY KEY,
    doc        bytea,
    revision   bigint NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now()
);
