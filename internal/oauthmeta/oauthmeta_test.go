package oauthmeta

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestOffered(t *testing.T) {
	json := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"resource":"x","authorization_servers":["https://as.example"]}`)
	}
	page := func(status int) func(http.ResponseWriter) {
		return func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, "<!DOCTYPE html><html><body>nothing here</body></html>")
		}
	}
	redirect := func(w http.ResponseWriter) {
		w.Header().Set("Location", "/login")
		w.WriteHeader(http.StatusFound)
	}
	oauthError := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":"invalid_request","error_description":"response_type is missing"}`)
	}
	tests := []struct {
		name     string
		serve    map[string]func(http.ResponseWriter) // by path; anything else gets a 404 page
		metadata string                               // the challenge's resource_metadata path, if any
		// otherwise answers any other path; nil means a 404 page.
		otherwise func(http.ResponseWriter)
		want      bool
	}{
		{name: "protected-resource metadata at the endpoint's path", serve: map[string]func(http.ResponseWriter){"/.well-known/oauth-protected-resource/mcp": json}, want: true},
		{name: "protected-resource metadata at the root", serve: map[string]func(http.ResponseWriter){"/.well-known/oauth-protected-resource": json}, want: true},
		{name: "authorization-server metadata at the origin", serve: map[string]func(http.ResponseWriter){"/.well-known/oauth-authorization-server": json}, want: true},
		{name: "OpenID configuration at the origin", serve: map[string]func(http.ResponseWriter){"/.well-known/openid-configuration": json}, want: true},
		{name: "where the challenge points", serve: map[string]func(http.ResponseWriter){"/meta": json}, metadata: "/meta", want: true},
		{name: "nothing: 404 pages everywhere", want: false},
		{name: "nothing: a catch-all answering every path with a page", serve: map[string]func(http.ResponseWriter){
			"/.well-known/oauth-protected-resource/mcp": page(200), "/.well-known/oauth-protected-resource": page(200),
			"/.well-known/oauth-authorization-server": page(200), "/.well-known/openid-configuration": page(200)}, want: false},
		{name: "a location that fails leaves it open", serve: map[string]func(http.ResponseWriter){"/.well-known/openid-configuration": page(503)}, want: true},
		// No metadata, but the 2025-03-26 default endpoints at the origin.
		{name: "2025-03-26 default endpoints: /authorize redirects", serve: map[string]func(http.ResponseWriter){"/authorize": redirect}, want: true},
		{name: "2025-03-26 default endpoints: /authorize refuses a bare request", serve: map[string]func(http.ResponseWriter){"/authorize": oauthError}, want: true},
		{name: "2025-03-26 default endpoints: /authorize fails", serve: map[string]func(http.ResponseWriter){"/authorize": page(500)}, want: true},
		{name: "nothing: /authorize behind the same gate as the endpoint", serve: map[string]func(http.ResponseWriter){"/authorize": page(401)}, want: false},
		{name: "nothing: /authorize not allowed", serve: map[string]func(http.ResponseWriter){"/authorize": page(405)}, want: false},
		{name: "nothing: a catch-all's page at every path, /authorize too", otherwise: page(200), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodGet || r.URL.Path == "/register" || r.URL.Path == "/token" {
					t.Errorf("asked %s %s: the probe must change nothing", r.Method, r.URL.Path)
				}
				if f, ok := tt.serve[r.URL.Path]; ok {
					f(w)
					return
				}
				if tt.otherwise != nil {
					tt.otherwise(w)
					return
				}
				page(http.StatusNotFound)(w)
			}))
			defer srv.Close()
			metadata := ""
			if tt.metadata != "" {
				metadata = srv.URL + tt.metadata
			}
			assert.Equal(t, tt.want, Offered(t.Context(), srv.Client(), srv.URL+"/mcp", metadata))
		})
	}
}

// A server that cannot be asked at all may offer a sign-in: no answer is
// not an answer.
func TestOfferedWhenUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	assert.True(t, Offered(t.Context(), http.DefaultClient, url+"/mcp", ""))
}
