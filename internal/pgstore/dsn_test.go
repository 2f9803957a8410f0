package pgstore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/state"
)

func errUnavailableForTest() error { return state.ErrUnavailable }

func TestParseURL(t *testing.T) {
	tests := []struct {
		name      string
		url       string
		wantErr   error
		wantText  string // part of the error; the URL's secrets never are
		wantWhere string
	}{
		{name: "host and database", url: "postgres://gw@db.internal:6432/mcpwrap?sslmode=require", wantWhere: "postgres://db.internal:6432/mcpwrap"},
		{name: "postgresql scheme", url: "postgresql://db/mcpwrap", wantWhere: "postgres://db:5432/mcpwrap"},
		{name: "unix socket", url: "postgres://gw@/mcpwrap?host=/run/postgresql", wantWhere: "postgres://localhost:5432/mcpwrap (socket in /run/postgresql)"},
		{name: "password in the user info", url: "postgres://gw:s3cret@db/mcpwrap", wantErr: ErrPasswordInURL},
		{name: "password parameter", url: "postgres://gw@db/mcpwrap?password=s3cret", wantErr: ErrPasswordInURL},
		{name: "password parameter, any case", url: "postgres://gw@db/mcpwrap?PassWord=s3cret", wantErr: ErrPasswordInURL},
		{name: "not a URL", url: "host=db password=s3cret", wantText: "must start with postgres://"},
		{name: "bad port", url: "postgres://db:notaport/x?sslmode=s3cret", wantText: "URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseURL(tt.url)
			switch {
			case tt.wantErr != nil:
				require.ErrorIs(t, err, tt.wantErr)
			case tt.wantText != "":
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantText)
			default:
				require.NoError(t, err)
				assert.Equal(t, tt.wantWhere, describe(cfg))
				assert.EqualValues(t, maxConns, cfg.MaxConns)
				return
			}
			assert.NotContains(t, err.Error(), "s3cret")
		})
	}
}
