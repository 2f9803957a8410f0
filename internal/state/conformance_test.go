package state_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/state"
	"github.com/mcpwrap/mcpwrap/internal/state/storetest"
)

// TestFileStoreConformance runs the store conformance suite against the
// file store, every handle a FileStore of its own on one directory.
func TestFileStoreConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		dir := t.TempDir()
		return storetest.Backend{
			Open: func(*testing.T) state.Store { return state.Open(dir, nil) },
			Corrupt: func(t *testing.T, server string, doc []byte) {
				require.NoError(t, os.WriteFile(state.Open(dir, nil).Path(server), doc, 0o600))
			},
		}
	})
}
