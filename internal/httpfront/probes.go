package httpfront

import (
	"context"
	"errors"
	"net/http"
)

// Paths of the probes mcpwrap serves beside the MCP endpoint.
const (
	PathHealthz = "/healthz"
	PathReadyz  = "/readyz"
)

// Probes answers the health checks of a load balancer or of Kubernetes for
// one replica: Healthz says the process serves HTTP (liveness), Readyz
// that it can take MCP requests (readiness). They take GET and HEAD, need
// no token and check no Host, as probes send neither; what they tell is
// "ok", or "not ready: " and Ready's reason, which must name no path or
// secret. A reason with a Degraded method that reports true (a replica that
// still serves, say by the policy it loaded last while its store is out of
// reach) is answered 200, "degraded: " and the reason: a balancer keeps
// sending it requests, so that an outage shared by every replica does not
// take them all out at once. The zero value is always ready.
type Probes struct {
	// Ready reports whether the replica can serve: nil, or why not. It is
	// called on every readiness probe with the probe's context, so it should
	// answer from memory. Nil means always ready.
	Ready func(ctx context.Context) error
}

// Healthz answers 200 while the process serves HTTP at all.
func (p Probes) Healthz(w http.ResponseWriter, r *http.Request) {
	if !probeMethod(w, r) {
		return
	}
	writeProbe(w, r, http.StatusOK, "ok")
}

// Readyz answers 200 when Ready returns nil, else 503 with its reason, or
// 200 with it when it is degraded (see Probes).
func (p Probes) Readyz(w http.ResponseWriter, r *http.Request) {
	if !probeMethod(w, r) {
		return
	}
	if p.Ready != nil {
		if err := p.Ready(r.Context()); err != nil {
			if degraded(err) {
				writeProbe(w, r, http.StatusOK, "degraded: "+err.Error())
				return
			}
			writeProbe(w, r, http.StatusServiceUnavailable, "not ready: "+err.Error())
			return
		}
	}
	writeProbe(w, r, http.StatusOK, "ok")
}

// degraded reports whether err, or an error it wraps, has a Degraded method
// that reports true.
func degraded(err error) bool {
	var d interface{ Degraded() bool }
	return errors.As(err, &d) && d.Degraded()
}

// probeMethod answers 405 to anything but GET and HEAD.
func probeMethod(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, "Method Not Allowed: use GET", http.StatusMethodNotAllowed)
	return false
}

func writeProbe(w http.ResponseWriter, r *http.Request, status int, text string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write([]byte(text + "\n"))
	}
}
