package upstream

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRemoteSendsToolDesignatedHeaders: a 2026-07-28 tools/call carries
// the Mcp-Param headers its tool's definition designates, learnt from the
// tools/list result the connection relayed.
func TestRemoteSendsToolDesignatedHeaders(t *testing.T) {
	rec := newRecorder(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.Contains(string(body), `"tools/list"`):
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"deploy","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"count":{"type":"integer","x-mcp-header":"Count"},"note":{"type":"string","x-mcp-header":"Note"}}}}]}}`)
		default:
			io.WriteString(w, `{"jsonrpc":"2.0","id":2,"result":{"content":[]}}`)
		}
	}))
	ts := httptest.NewServer(rec)
	t.Cleanup(ts.Close)
	p := newPeer(t, dial(t, ts.URL))
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	p.call(1, "tools/list", `{`+meta+`}`)
	p.call(2, "tools/call", `{"name":"deploy","arguments":{"region":"eu-west1","count":3,"note":null},`+meta+`}`)

	seen := rec.requests()
	require.Len(t, seen, 2)
	call := seen[1].Header
	assert.Equal(t, "tools/call", call.Get("Mcp-Method"))
	assert.Equal(t, "deploy", call.Get("Mcp-Name"))
	assert.Equal(t, "eu-west1", call.Get("Mcp-Param-Region"))
	assert.Equal(t, "3", call.Get("Mcp-Param-Count"))
	assert.Empty(t, call.Values("Mcp-Param-Note"), "a null argument has no header")
}

// TestRemoteStatelessNotificationHeaders: a 2026-07-28 client's
// notification, which carries no version of its own, is POSTed with the
// version of its requests and its Mcp-Method, as every POST must be.
func TestRemoteStatelessNotificationHeaders(t *testing.T) {
	rec := newRecorder(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"id"`) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	ts := httptest.NewServer(rec)
	t.Cleanup(ts.Close)
	p := newPeer(t, dial(t, ts.URL))
	p.call(1, "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`)
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`)

	seen := rec.requests()
	require.Len(t, seen, 2)
	assert.Equal(t, "2026-07-28", seen[1].Header.Get("Mcp-Protocol-Version"))
	assert.Equal(t, "notifications/cancelled", seen[1].Header.Get("Mcp-Method"))
}
