package middleware

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWithClientMeta(t *testing.T) {
	discover := Handshake{Method: "server/discover", Params: json.RawMessage(
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c"},"progressToken":7}}`)}
	meta := `"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"c"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	tests := []struct {
		name   string
		hs     Handshake
		method string
		params string
		want   string
	}{
		{name: "2026 session, no params", hs: discover, method: "tools/list", params: "", want: `{` + meta + `}`},
		{name: "2026 session, a cursor", hs: discover, method: "tools/list", params: `{"cursor":"x"}`, want: `{` + meta + `,"cursor":"x"}`},
		{name: "own _meta kept", hs: discover, method: "ping", params: `{"_meta":{"a":1}}`, want: `{"_meta":{"a":1}}`},
		{name: "handshakes untouched", hs: discover, method: "server/discover", params: `{}`, want: `{}`},
		{name: "2025 session untouched", hs: Handshake{Method: "initialize", Params: json.RawMessage(`{}`)}, method: "tools/list", params: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Session{hs: tt.hs}
			got := s.withClientMeta(tt.method, json.RawMessage(tt.params))
			assert.Equal(t, tt.want, string(got))
		})
	}
}
