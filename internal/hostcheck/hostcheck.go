// Package hostcheck guards local HTTP servers against DNS rebinding and
// cross-origin requests: the Host of a request over a loopback connection
// must be a loopback name, and its Origin, if any, a loopback or an allowed
// one. It is shared by httpfront (mcpwrap --listen) and the control panel
// (mcpwrap ui), so that both refuse the same requests.
package hostcheck

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Check guards against DNS rebinding: over a loopback connection the Host
// must be a loopback name, and any Origin must be a loopback one or one of
// allowed (exact "scheme://host[:port]" strings). The error says which
// header was refused and its value.
func Check(r *http.Request, allowed []string) error {
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && IsLoopback(HostOf(local.String())) {
		if !IsLoopback(HostOf(r.Host)) {
			return fmt.Errorf("the Host %q is not a loopback name", r.Host)
		}
	}
	origin := r.Header.Get("Origin")
	if origin == "" || slices.Contains(allowed, origin) {
		return nil
	}
	if u, err := url.Parse(origin); err == nil && u.Host != "" && IsLoopback(u.Hostname()) {
		return nil
	}
	return fmt.Errorf("the Origin %q is not allowed", origin)
}

// HostOf returns the host part of a host[:port], without IPv6 brackets.
func HostOf(hostport string) string {
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		return host
	}
	return strings.Trim(hostport, "[]")
}

// IsLoopback reports whether host is "localhost" or a loopback IP.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// IsLoopbackAddr reports whether a listen address (host:port) binds
// loopback only. An empty host binds every interface, so it does not.
func IsLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && IsLoopback(host)
}
