package upstream

import (
	"context"
	"net/http"
)

type requestHeaderKey struct{}

// WithRequestHeader returns ctx carrying h, which a [RemoteConn] adds to
// the HTTP request that carries a message written with ctx, after the
// configured headers (internal/telemetry sets mcpwrap's traceparent this
// way, only when traced). A stdio upstream ignores it. h must not be
// modified afterwards.
func WithRequestHeader(ctx context.Context, h http.Header) context.Context {
	return context.WithValue(ctx, requestHeaderKey{}, h)
}

// RequestHeader is the header ctx carries for the request (see
// [WithRequestHeader]), or nil.
func RequestHeader(ctx context.Context) http.Header {
	h, _ := ctx.Value(requestHeaderKey{}).(http.Header)
	return h
}
