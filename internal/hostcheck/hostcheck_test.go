package hostcheck

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheck(t *testing.T) {
	loopback := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	tests := []struct {
		name    string
		local   net.Addr
		host    string
		origin  string
		allowed []string
		ok      bool
	}{
		{name: "loopback host, no origin", local: loopback, host: "127.0.0.1:8080", ok: true},
		{name: "localhost", local: loopback, host: "localhost:8080", ok: true},
		{name: "ipv6 loopback", local: loopback, host: "[::1]:8080", ok: true},
		{name: "rebound name", local: loopback, host: "evil.example:8080"},
		{name: "foreign origin", local: loopback, host: "127.0.0.1:8080", origin: "https://evil.example"},
		{name: "loopback origin", local: loopback, host: "127.0.0.1:8080", origin: "http://localhost:3000", ok: true},
		{name: "allowed origin", local: loopback, host: "127.0.0.1:8080", origin: "https://app.example", allowed: []string{"https://app.example"}, ok: true},
		{name: "opaque origin", local: loopback, host: "127.0.0.1:8080", origin: "null"},
		{name: "non-loopback listener takes any host", local: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 80}, host: "mcp.example", ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.Host = tt.host
			if tt.origin != "" {
				r.Header.Set("Origin", tt.origin)
			}
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, tt.local))
			err := Check(r, tt.allowed)
			assert.Equal(t, tt.ok, err == nil, "%v", err)
		})
	}
}

func TestIsLoopbackAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:0": true, "localhost:80": true, "[::1]:1": true,
		":8080": false, "0.0.0.0:80": false, "example.com:80": false, "127.0.0.1": false,
	} {
		assert.Equal(t, want, IsLoopbackAddr(addr), addr)
	}
}
