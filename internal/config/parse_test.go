package config

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/policy"
)

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		input   string
		want    string // the whole message
		wantKey string
	}{
		{
			name: "unknown key, located",
			input: `{
  "servers": {
    "filesystem": {
      "enabled": true,
      "env": {},
      "retry_refused": false,
        "tool": {}
    }
  }
}`,
			want:    `config.json:7:9: unknown key "servers.filesystem.tool"`,
			wantKey: "servers.filesystem.tool",
		},
		{name: "unknown top-level key", input: `{"server": {}}`, want: `config.json:1:2: unknown key "server"`, wantKey: "server"},
		{name: "unknown retry key", input: `{"defaults": {"retry": {"max": 3}}}`, want: `config.json:1:25: unknown key "defaults.retry.max"`, wantKey: "defaults.retry.max"},
		{name: "unknown tools key", input: `{"defaults": {"tools": {"deny": []}}}`, want: `config.json:1:25: unknown key "defaults.tools.deny"`, wantKey: "defaults.tools.deny"},
		{name: "no servers in defaults", input: `{"defaults": {"servers": {}}}`, want: `config.json:1:15: unknown key "defaults.servers"`, wantKey: "defaults.servers"},
		{name: "duplicate key", input: `{"servers": {"a": {}, "a": {}}}`, want: `config.json:1:23: duplicate key "servers.a"`, wantKey: "servers.a"},

		{name: "store not a location", input: `{"store": "/var/lib/mcpwrap"}`, want: `config.json:1:11: "store": want "file" (the state directory, the default) or a postgres:// URL`, wantKey: "store"},
		{
			name: "store with a password", input: `{"store": "postgres://gw:s3cret@db/mcpwrap"}`,
			want: `config.json:1:11: "store": the URL must not carry the password: put it in $PGPASSWORD or a password file ($PGPASSFILE, else ~/.pgpass)`, wantKey: "store",
		},
		{
			name: "store with a password parameter", input: `{"store": "postgres://db/mcpwrap?password=s3cret"}`,
			want: `config.json:1:11: "store": the URL must not carry the password: put it in $PGPASSWORD or a password file ($PGPASSFILE, else ~/.pgpass)`, wantKey: "store",
		},
		{name: "top level not an object", input: `[]`, want: `config.json:1:1: the top level must be an object, got an array`},
		{name: "servers not an object", input: `{"servers": []}`, want: `config.json:1:13: "servers": expected an object, got an array`, wantKey: "servers"},
		{name: "server not an object", input: `{"servers": {"a": true}}`, want: `config.json:1:19: "servers.a": expected an object, got a boolean`, wantKey: "servers.a"},
		{name: "boolean as string", input: `{"defaults": {"enabled": "yes"}}`, want: `config.json:1:26: "defaults.enabled": expected a boolean, got a string`, wantKey: "defaults.enabled"},
		{name: "null is not unset", input: `{"defaults": {"enabled": null}}`, want: `config.json:1:26: "defaults.enabled": expected a boolean, got null`, wantKey: "defaults.enabled"},
		{
			name: "duration as number", input: `{"defaults": {"ready_timeout": 30}}`,
			want: `config.json:1:32: "defaults.ready_timeout": expected a duration string such as "30s", got a number`, wantKey: "defaults.ready_timeout",
		},
		{
			name: "duration without unit", input: `{"defaults": {"ready_timeout": "30"}}`,
			want: `config.json:1:32: "defaults.ready_timeout": invalid duration "30" (want a number with a unit, such as "250ms" or "30s")`, wantKey: "defaults.ready_timeout",
		},
		{
			name: "zero duration", input: `{"defaults": {"retry": {"initial": "0s"}}}`,
			want: `config.json:1:36: "defaults.retry.initial": the duration must be positive, got "0s"`, wantKey: "defaults.retry.initial",
		},
		{
			name: "negative duration", input: `{"defaults": {"retry": {"max_elapsed": "-1s"}}}`,
			want: `config.json:1:40: "defaults.retry.max_elapsed": the duration must be positive, got "-1s"`, wantKey: "defaults.retry.max_elapsed",
		},
		{
			name: "fractional attempts", input: `{"defaults": {"retry": {"max_attempts": 1.5}}}`,
			want: `config.json:1:41: "defaults.retry.max_attempts": expected an integer, got 1.5`, wantKey: "defaults.retry.max_attempts",
		},
		{
			name: "zero attempts", input: `{"defaults": {"retry": {"max_attempts": 0}}}`,
			want: `config.json:1:41: "defaults.retry.max_attempts": must be at least 1, got 0`, wantKey: "defaults.retry.max_attempts",
		},
		{
			name: "multiplier below one", input: `{"defaults": {"retry": {"multiplier": 0.5}}}`,
			want: `config.json:1:39: "defaults.retry.multiplier": must be a number at least 1, got 0.5`, wantKey: "defaults.retry.multiplier",
		},
		{
			name: "multiplier as string", input: `{"defaults": {"retry": {"multiplier": "2"}}}`,
			want: `config.json:1:39: "defaults.retry.multiplier": expected a number, got a string`, wantKey: "defaults.retry.multiplier",
		},
		{
			name: "jitter above one", input: `{"defaults": {"retry": {"jitter": 1.5}}}`,
			want: `config.json:1:35: "defaults.retry.jitter": must be a number between 0 and 1, got 1.5`, wantKey: "defaults.retry.jitter",
		},
		{
			name: "tiny max_line_bytes", input: `{"defaults": {"max_line_bytes": 64}}`,
			want: `config.json:1:33: "defaults.max_line_bytes": must be at least 1024, got 64`, wantKey: "defaults.max_line_bytes",
		},
		{
			name: "no held requests", input: `{"defaults": {"max_held_requests": 0}}`,
			want: `config.json:1:36: "defaults.max_held_requests": must be at least 1, got 0`, wantKey: "defaults.max_held_requests",
		},
		{
			name: "tiny max_held_bytes", input: `{"defaults": {"max_held_bytes": 64}}`,
			want: `config.json:1:33: "defaults.max_held_bytes": must be at least 1024, got 64`, wantKey: "defaults.max_held_bytes",
		},
		{
			name: "unknown approval", input: `{"defaults": {"approval": "auto"}}`,
			want: `config.json:1:27: "defaults.approval": unknown value "auto" (want tofu, manual, off)`, wantKey: "defaults.approval",
		},
		{
			name: "empty approval", input: `{"defaults": {"approval": ""}}`,
			want: `config.json:1:27: "defaults.approval": unknown value "" (want tofu, manual, off)`, wantKey: "defaults.approval",
		},
		{
			name: "unknown tools default", input: `{"defaults": {"tools": {"default": "some"}}}`,
			want: `config.json:1:36: "defaults.tools.default": unknown value "some" (want all, read_only, none)`, wantKey: "defaults.tools.default",
		},
		{
			name: "unknown discovery", input: `{"defaults": {"discovery": "sometimes"}}`,
			want: `config.json:1:28: "defaults.discovery": unknown value "sometimes" (want auto, always, never)`, wantKey: "defaults.discovery",
		},
		{
			name: "bad discovery tool name", input: `{"defaults": {"discovery_tool": "find tools"}}`,
			want: `config.json:1:33: "defaults.discovery_tool": invalid tool name "find tools" (want 1 to 128 of A-Z a-z 0-9 _ - .)`, wantKey: "defaults.discovery_tool",
		},
		{
			name: "override not a boolean", input: `{"defaults": {"tools": {"overrides": {"x": "off"}}}}`,
			want: `config.json:1:44: "defaults.tools.overrides.x": expected a boolean, got a string`, wantKey: "defaults.tools.overrides.x",
		},
		{
			name: "malformed override glob", input: `{"defaults": {"tools": {"overrides": {"write_[": false}}}}`,
			want:    `config.json:1:39: "defaults.tools.overrides.write_[": malformed tool name pattern "write_[": syntax error in pattern`,
			wantKey: "defaults.tools.overrides.write_[",
		},
		{
			name: "env value not a string", input: `{"defaults": {"env": {"N": 1}}}`,
			want: `config.json:1:28: "defaults.env.N": expected a string, got a number`, wantKey: "defaults.env.N",
		},
		{
			name: "env name with =", input: `{"defaults": {"env": {"A=B": "x"}}}`,
			want: `config.json:1:23: "defaults.env.A=B": an environment variable name must be non-empty, without '=' or NUL`, wantKey: "defaults.env.A=B",
		},
		{name: "empty server name", input: `{"servers": {"": {}}}`, want: `config.json:1:14: a server name must not be empty`, wantKey: "servers."},

		{name: "empty file", input: ``, want: `config.json:1:1: invalid JSON: unexpected end of JSON input`},
		{name: "trailing comma", input: "{\n  \"servers\": {},\n}", want: `config.json:3:1: invalid JSON: invalid character '}' looking for beginning of object key string`},
		{name: "unterminated", input: `{"servers": {"a": {`, want: `config.json:1:19: invalid JSON: unexpected end of JSON input`},
		{name: "trailing data", input: `{} {}`, want: `config.json:1:4: invalid JSON: invalid character '{' after top-level value`},
		{name: "comment", input: "{\n  // no comments\n}", want: `config.json:2:3: invalid JSON: invalid character '/' looking for beginning of object key string`},
		{name: "columns count characters", input: `{"defaults": {"env": {"é": 1}}}`, want: `config.json:1:28: "defaults.env.é": expected a string, got a number`, wantKey: "defaults.env.é"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse("config.json", []byte(tt.input))
			require.Error(t, err)
			assert.Nil(t, f)
			assert.Equal(t, tt.want, err.Error())
			require.ErrorIs(t, err, ErrInvalid)
			var cfgErr *Error
			require.ErrorAs(t, err, &cfgErr)
			assert.Equal(t, "config.json", cfgErr.File)
			assert.Equal(t, tt.wantKey, cfgErr.Key)
			assert.Positive(t, cfgErr.Line)
			assert.Positive(t, cfgErr.Column)
		})
	}
}

func TestParseErrorCauses(t *testing.T) {
	t.Parallel()
	_, err := Parse("c.json", []byte(`{"defaults": {"tools": {"overrides": {"[": true}}}}`))
	assert.ErrorIs(t, err, policy.ErrInvalid, "a bad pattern keeps the policy error")

	_, err = Parse("c.json", []byte(`{`))
	var syntax *json.SyntaxError
	assert.ErrorAs(t, err, &syntax, "a syntax error keeps the JSON error")
}

func TestParseAcceptsEveryKey(t *testing.T) {
	t.Parallel()
	for _, input := range []string{
		`{}`,
		`{"servers": {}}`,
		`{"defaults": {}, "servers": {"a": {}, "b.c": {"enabled": false}}}`,
		" \n\t{ \"servers\" : { \"a\" : { \"tools\" : { \"overrides\" : { } } } } }\n",
	} {
		_, err := Parse("config.json", []byte(input))
		assert.NoError(t, err, input)
	}
}
