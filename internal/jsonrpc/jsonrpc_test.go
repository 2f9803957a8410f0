package jsonrpc

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/token"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/sourcetest"
)

func TestErrorResponse(t *testing.T) {
	tests := []struct {
		name    string
		id      []byte
		code    int
		message string
		data    json.RawMessage
		want    string
	}{
		{name: "number id", id: []byte("7"), code: CodeInternalError, message: "the session ended before the request was answered",
			want: `{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"the session ended before the request was answered"}}`},
		{name: "string id as sent", id: []byte(`"a<b>&\u00e9"`), code: CodeInvalidParams, message: "m",
			want: `{"jsonrpc":"2.0","id":"a<b>&\u00e9","error":{"code":-32602,"message":"m"}}`},
		{name: "nil id is null", code: CodeParseError, message: "Parse error",
			want: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		{name: "empty id is null", id: []byte{}, code: CodeParseError, message: "p",
			want: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"p"}}`},
		{name: "id not JSON is null", id: []byte(`{"a`), code: CodeInvalidRequest, message: "r",
			want: `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"r"}}`},
		{name: "id compacted", id: []byte(" 1\n"), code: CodeMethodNotFound, message: "x",
			want: `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}`},
		{name: "message escaped as encoding/json does", id: []byte("1"), code: CodeInternalError, message: "a \"quote\"\n<tag> & \u2028 \xff",
			want: `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"a \"quote\"\n\u003ctag\u003e \u0026 \u2028 \ufffd"}}`},
		{name: "data", id: []byte("2"), code: CodeRequestTimeout, message: "t", data: json.RawMessage(`{"retryable":true}`),
			want: `{"jsonrpc":"2.0","id":2,"error":{"code":-32001,"message":"t","data":{"retryable":true}}}`},
		{name: "data compacted onto one line", id: []byte("2"), code: CodeUnsupportedProtocolVersion, message: "v",
			data: json.RawMessage("{\n  \"supported\": [\"x\"]\n}"),
			want: `{"jsonrpc":"2.0","id":2,"error":{"code":-32022,"message":"v","data":{"supported":["x"]}}}`},
		{name: "null data kept", id: []byte("2"), code: CodeServerError, message: "s", data: json.RawMessage("null"),
			want: `{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"s","data":null}}`},
		{name: "data not JSON left out", id: []byte("3"), code: CodeHeaderMismatch, message: "h", data: json.RawMessage(`{"a":`),
			want: `{"jsonrpc":"2.0","id":3,"error":{"code":-32020,"message":"h"}}`},
		{name: "any code", id: []byte("4"), code: 42, message: "",
			want: `{"jsonrpc":"2.0","id":4,"error":{"code":42,"message":""}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ErrorResponse(tt.id, tt.code, tt.message, tt.data)
			assert.Equal(t, tt.want, string(got))
			assert.True(t, json.Valid(got))
		})
	}
}

// TestErrorResponseAsEncodingJSON: for the ids and data mcpwrap sends (a
// number or a string id, data from json.Marshal), the bytes are those of
// json.Marshal of the response, which the middleware and the HTTP front
// encoded with before.
func TestErrorResponseAsEncodingJSON(t *testing.T) {
	data, err := json.Marshal(map[string]any{"status": "timeout", "retryable": true})
	require.NoError(t, err)
	type wireError struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data,omitempty"`
	}
	const message = "the upstream could not answer <the request> & \"why\""
	for _, id := range []string{"1", "-7", "1.5e3", `"abc"`, `"mcpwrap-x-1"`, "null"} {
		for _, data := range []json.RawMessage{nil, data} {
			want, err := json.Marshal(struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   wireError       `json:"error"`
			}{"2.0", json.RawMessage(id), wireError{CodeInternalError, message, data}})
			require.NoError(t, err)
			assert.Equal(t, string(want), string(ErrorResponse([]byte(id), CodeInternalError, message, data)), id)
		}
	}
}

// FuzzErrorResponse: the response is valid JSON on one line whatever the
// arguments, and reads back as the id (null when not JSON), code, message
// and data (absent when not JSON) given.
func FuzzErrorResponse(f *testing.F) {
	f.Add([]byte("1"), -32603, "m", []byte(`{"a":1}`))
	f.Add([]byte(`"x\n"`), 0, "line\nbreak \xff <", []byte("[1,\n2]"))
	f.Add([]byte(nil), -32700, "", []byte(nil))
	f.Add([]byte(`{"a"`), 7, "\u2028", []byte("nul"))
	f.Fuzz(func(t *testing.T, id []byte, code int, message string, data []byte) {
		got := ErrorResponse(id, code, message, data)
		require.True(t, json.Valid(got), "%q", got)
		require.NotContains(t, string(got), "\n")
		var r struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   struct {
				Code    int              `json:"code"`
				Message string           `json:"message"`
				Data    *json.RawMessage `json:"data"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(got, &r))
		assert.Equal(t, "2.0", r.JSONRPC)
		wantID := "null"
		if json.Valid(id) {
			wantID = compact(t, id)
		}
		assert.Equal(t, wantID, string(r.ID))
		assert.Equal(t, code, r.Error.Code)
		assert.Equal(t, string([]rune(message)), r.Error.Message, "each invalid byte reads as U+FFFD")
		if json.Valid(data) {
			require.NotNil(t, r.Error.Data)
			assert.Equal(t, compact(t, data), string(*r.Error.Data))
		} else {
			assert.Nil(t, r.Error.Data)
		}
	})
}

func compact(t *testing.T, v []byte) string {
	var b bytes.Buffer
	require.NoError(t, json.Compact(&b, v))
	return b.String()
}

// TestCodesHaveOneOwner keeps the codes in this package: no other
// package's code spells a code of the reserved range (-32768 to -32000) as
// a negative number or in a string. Tests are left out (they speak for a
// peer, which knows the wire, not mcpwrap's constants), and so is e2e.
func TestCodesHaveOneOwner(t *testing.T) {
	inString := regexp.MustCompile(`-32[0-7][0-9][0-9]\b`)
	var found []string
	sourcetest.Inspect(t, "internal/jsonrpc", func(n ast.Node, at func(token.Pos) string) {
		switch n := n.(type) {
		case *ast.UnaryExpr:
			lit, ok := n.X.(*ast.BasicLit)
			if !ok || n.Op != token.SUB || lit.Kind != token.INT {
				return
			}
			if v, err := strconv.ParseInt(lit.Value, 0, 64); err == nil && v >= 32000 && v <= 32768 {
				found = append(found, at(n.Pos())+": -"+lit.Value)
			}
		case *ast.BasicLit:
			if n.Kind != token.STRING {
				return
			}
			if s, err := strconv.Unquote(n.Value); err == nil && inString.MatchString(s) {
				found = append(found, at(n.Pos())+": "+inString.FindString(s))
			}
		}
	})
	assert.Empty(t, found, "JSON-RPC error codes spelled outside internal/jsonrpc: import them")
}
