package httpfront

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestProbes: /healthz answers 200 whatever the readiness; /readyz 200 when
// Ready returns nil (or is nil), else 503 with the reason; both take GET and
// HEAD only, with no token and from any Host.
func TestProbes(t *testing.T) {
	errStore := errors.New("the state store cannot be read (see the log)")
	ready := func(context.Context) error { return nil }
	unready := func(context.Context) error { return errStore }
	stale := func(context.Context) error {
		return fmt.Errorf("wrapped: %w", degradedErr{errors.New("the state store is out of reach")})
	}
	tests := []struct {
		name       string
		ready      func(context.Context) error
		method     string
		path       string
		wantStatus int
		wantBody   string
	}{
		{name: "alive, ready", ready: ready, method: http.MethodGet, path: PathHealthz, wantStatus: http.StatusOK, wantBody: "ok\n"},
		{name: "alive while not ready", ready: unready, method: http.MethodGet, path: PathHealthz, wantStatus: http.StatusOK, wantBody: "ok\n"},
		{name: "ready", ready: ready, method: http.MethodGet, path: PathReadyz, wantStatus: http.StatusOK, wantBody: "ok\n"},
		{name: "zero value is ready", method: http.MethodGet, path: PathReadyz, wantStatus: http.StatusOK, wantBody: "ok\n"},
		{name: "not ready", ready: unready, method: http.MethodGet, path: PathReadyz, wantStatus: http.StatusServiceUnavailable,
			wantBody: "not ready: the state store cannot be read (see the log)\n"},
		{name: "degraded still serves", ready: stale, method: http.MethodGet, path: PathReadyz, wantStatus: http.StatusOK,
			wantBody: "degraded: wrapped: the state store is out of reach\n"},
		{name: "HEAD not ready", ready: unready, method: http.MethodHead, path: PathReadyz, wantStatus: http.StatusServiceUnavailable},
		{name: "POST refused", ready: ready, method: http.MethodPost, path: PathReadyz, wantStatus: http.StatusMethodNotAllowed,
			wantBody: "Method Not Allowed: use GET\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Probes{Ready: tt.ready}
			mux := http.NewServeMux()
			mux.HandleFunc(PathHealthz, p.Healthz)
			mux.HandleFunc(PathReadyz, p.Readyz)
			r := httptest.NewRequest(tt.method, "http://10.1.2.3:8931"+tt.path, nil) // a pod IP, no token
			w := httptest.NewRecorder()
			mux.ServeHTTP(w, r)
			assert.Equal(t, tt.wantStatus, w.Code)
			assert.Equal(t, tt.wantBody, w.Body.String())
			assert.Equal(t, "no-store", w.Header().Get("Cache-Control"))
		})
	}
}

// degradedErr is a reason Ready gives while the replica still serves.
type degradedErr struct{ error }

func (degradedErr) Degraded() bool  { return true }
func (e degradedErr) Unwrap() error { return e.error }
