package middleware

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAnswerToADeadServersRequestNeverReachesItsSuccessor is an attack on
// "every request is answered exactly once" across a crash: the upstream
// asks the client something (id 0), crashes, and its restarted process,
// numbering its requests from 0 again, asks something else under id 0. The
// client's answer to the first question went to the new process as the
// answer to its own, and the client's real answer was then dropped. Now
// the client is told the dead process's requests are cancelled, a new
// request under an id of the dead process's that the client has not
// answered is refused (the upstream is told, and may retry), and a late
// answer to a dead process's request is dropped.
func TestAnswerToADeadServersRequestNeverReachesItsSuccessor(t *testing.T) {
	h := startRestartable(t, nil, nil)
	question := `{"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{"messages":[]}}`
	h.ups[0].send(question + "\n")
	require.Equal(t, question, string(h.client.next()))

	h.ups[0].closeSend() // the upstream crashes
	cancelled := false
	for {
		msg := string(h.client.next())
		if strings.Contains(msg, "notifications/tools/list_changed") {
			break
		}
		var n struct {
			Method string `json:"method"`
			Params struct {
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		require.NoError(t, json.Unmarshal([]byte(msg), &n))
		if n.Method == "notifications/cancelled" && string(n.Params.RequestID) == "0" {
			cancelled = true
		}
	}
	assert.True(t, cancelled, "the client is told the dead process's request is cancelled")

	second := h.ups[1]
	env, err := framing.Peek(second.next())
	require.NoError(t, err)
	require.Equal(t, "initialize", env.Method)
	second.send(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":` + initializeResult + "}\n")
	require.Equal(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, string(second.next()))

	// The new process asks under id 0 before the client's late answer to
	// the dead one's id 0 arrives: once that answer is in, the id is free.
	second.send(`{"jsonrpc":"2.0","id":0,"method":"roots/list"}` + "\n")
	refusal := second.next()
	var refused response
	require.NoError(t, json.Unmarshal(refusal, &refused))
	assert.Equal(t, "0", string(refused.ID))
	require.NotNil(t, refused.Error, "the new process's request under a dead one's id is refused: %s", refusal)
	h.client.send(`{"jsonrpc":"2.0","id":0,"result":{"content":{"type":"text","text":"LATE SAMPLING ANSWER"}}}` + "\n")
	second.send(`{"jsonrpc":"2.0","id":1,"method":"roots/list"}` + "\n")
	for {
		msg := string(h.client.next())
		if strings.Contains(msg, `"id":1`) {
			break
		}
		assert.NotContains(t, msg, `"method":"roots/list"`, "the new process's id 0 reached the client: %s", msg)
	}
	h.client.send(`{"jsonrpc":"2.0","id":1,"result":{"roots":[]}}` + "\n")
	var got []string
	for {
		msg := string(second.next())
		got = append(got, msg)
		if strings.Contains(msg, `"roots":[]`) {
			break
		}
	}
	for _, msg := range got {
		assert.NotContains(t, msg, "LATE SAMPLING ANSWER", "the dead process's answer reached its successor")
	}
}
