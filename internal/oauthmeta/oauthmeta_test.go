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
	tests := []struct {
		name     string
		serve    map[string]func(http.ResponseWriter) // by path; anything else gets a 404 page
		metadata string                               // the challenge's resource_metadata path, if any
		want     bool
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if f, ok := tt.serve[r.URL.Path]; ok {
					f(w)
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
