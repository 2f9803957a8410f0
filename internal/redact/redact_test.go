package redact

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestURL(t *testing.T) {
	tests := []struct {
		name, raw, want string
	}{
		{name: "plain origin", raw: "https://mcp.example.com", want: "https://mcp.example.com"},
		{name: "path dropped", raw: "https://h/mcp", want: "https://h"},
		{name: "key in the path", raw: "https://h/sk-ak-SECRET/mcp", want: "https://h"},
		{name: "query and fragment", raw: "https://h/mcp?api_key=SECRET#frag", want: "https://h"},
		{name: "query on the origin", raw: "http://127.0.0.1:8080?api_key=SECRET", want: "http://127.0.0.1:8080"},
		{name: "user info", raw: "https://user:SECRET@h:8443/mcp", want: "https://h:8443"},
		{name: "IPv6 host", raw: "http://[::1]:9000/x?k=SECRET", want: "http://[::1]:9000"},
		{name: "does not parse", raw: "http://[::1/SECRET", want: Unparsable},
		{name: "no scheme", raw: "h/SECRET", want: Unparsable},
		{name: "empty", raw: "", want: Unparsable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, URL(tt.raw))
		})
	}
}

func TestText(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{name: "no URL", text: "connection refused", want: "connection refused"},
		{name: "quoted URL", text: `Post "https://user:pw@h/mcp?api_key=SECRET": EOF`, want: `Post "https://h": EOF`},
		{
			name: "go-sdk issuer mismatch",
			text: `metadata issuer "http://127.0.0.1:1" does not match issuer URL "http://127.0.0.1:1?api_key=SECRET"`,
			want: `metadata issuer "http://127.0.0.1:1" does not match issuer URL "http://127.0.0.1:1"`,
		},
		{name: "unquoted, then text", text: "authorization server at https://h/t/SECRET does not implement PKCE", want: "authorization server at https://h does not implement PKCE"},
		{name: "two URLs", text: "a https://h/1?k=SECRET b wss://g/2/SECRET", want: "a https://h b wss://g"},
		{name: "at the end of a line", text: "get https://h/SECRET\nnext", want: "get https://h\nnext"},
		{name: "unparsable", text: `x "http://[::1/SECRET" y`, want: `x "<url>" y`},
		{name: "scheme only", text: "://SECRET", want: "<url>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Text(tt.text))
		})
	}
}
