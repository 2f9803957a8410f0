package pgstore

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/state"
)

// FuzzDecodeRow: the row decoder takes whatever a row holds (another
// process, an older or newer mcpwrap, a hand edit) without panicking; what
// it accepts is the server's state and survives a write and a read back
// unchanged, so a row the store rewrites never loses what it decoded.
func FuzzDecodeRow(f *testing.F) {
	f.Add("github", []byte(nil))
	f.Add("github", []byte(`{"server":"github","version":2,"disabled":["a","a","b"]}`))
	f.Add("github", []byte(`{"server":"github","version":2,"approvals":{"t":{"approved_at":"2026-07-28T00:00:00Z","hash":"sha256:1"}},`+
		`"catalog":{"seen_at":"2026-07-28T00:00:00Z","tools":{"t":{"definition":{"name":"t"},"hash":"sha256:1"}}}}`))
	f.Add("github", []byte(`{"server":"github","version":99}`))
	f.Add("github", []byte(`{"server":"gitlab","version":2}`))
	f.Add("x", []byte(`{"server":"x","version":2,"disabled":"a"}`))
	f.Add("x", []byte(`{"server":"x","version":2} trailing`))
	f.Add("x", []byte(`{"server":"x","version":2,"server":"y"}`))
	f.Add("x", []byte(`{"server":"x","version":2,"catalog":null,"approvals":{}}`))
	f.Add("x", []byte("{\"server\":\"x\",\"version\":2,\"disabled\":[\"\\u0000\",\"\xff\"]}"))
	f.Add("", []byte(``))
	f.Fuzz(func(t *testing.T, server string, doc []byte) {
		srv, err := decodeRow(server, doc)
		if err != nil {
			return
		}
		require.NotNil(t, srv)
		if srv.Empty() {
			return // written as NULL
		}
		written, err := state.Marshal(server, srv)
		require.NoError(t, err)
		again, err := decodeRow(server, written)
		require.NoError(t, err, "a document the store wrote is read back: %s", written)
		rewritten, err := state.Marshal(server, again)
		require.NoError(t, err)
		require.Equal(t, string(written), string(rewritten))
	})
}
