package stores

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/config"
	"github.com/mcpwrap/mcpwrap/internal/pgstore"
	"github.com/mcpwrap/mcpwrap/internal/state"
)

func TestSetOpen(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name     string
		location string
		wantType any
		wantErr  string
		wantDesc string
	}{
		{name: "file store", location: config.StoreFile, wantType: &state.FileStore{}, wantDesc: "files in " + dir},
		{name: "postgres", location: "postgres://gw@db.internal/mcpwrap", wantType: &pgstore.Store{}, wantDesc: "PostgreSQL postgres://db.internal:5432/mcpwrap"},
		{name: "neither", location: "/var/lib/mcpwrap", wantErr: `$MCPWRAP_STORE: want "file" (the state directory) or a postgres:// URL`},
		{name: "password", location: "postgres://gw:s3cret@db/mcpwrap", wantErr: "$MCPWRAP_STORE: the store's URL must not carry the password"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var set Set
			defer set.Close()
			st, err := set.Open(tt.location, "$MCPWRAP_STORE", dir, nil)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.NotContains(t, err.Error(), "s3cret")
				return
			}
			require.NoError(t, err)
			assert.IsType(t, tt.wantType, st)
			assert.Equal(t, tt.wantDesc, Describe(st))
			again, err := set.Open(tt.location, "$MCPWRAP_STORE", dir, nil)
			require.NoError(t, err)
			if _, ok := st.(*pgstore.Store); ok {
				assert.Same(t, st, again, "one pool per URL per Set")
			}
		})
	}
}
