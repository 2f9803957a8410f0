package auth

import (
	"context"
	"fmt"
	"hash/fnv"
	"html/template"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
)

// Redirect ports: the loopback redirect (RFC 8252) listens on a stable
// port per server, so that a registration (which names the redirect URI)
// stays valid across restarts.
const (
	redirectPortBase  = 49200
	redirectPortRange = 1000
)

// RedirectPort returns the default redirect port of the named server: a
// stable port in 49200-50199 derived from the name.
func RedirectPort(name string) int {
	h := fnv.New32a()
	h.Write([]byte(name))
	return redirectPortBase + int(h.Sum32()%redirectPortRange)
}

// RedirectURL is the redirect URI for port.
func RedirectURL(port int) string {
	return "http://127.0.0.1:" + strconv.Itoa(port) + "/callback"
}

// callback is the loopback listener that receives the authorization
// response. It accepts only a response carrying the state of the request
// it waits for; anything else gets an error page and is ignored.
type callback struct {
	server string // the server's name, for the page
	ln     net.Listener
	srv    *http.Server
	done   chan struct{} // closed when serve returned

	mu     sync.Mutex
	state  string
	result chan callbackResult
}

type callbackResult struct {
	res *sdkauth.AuthorizationResult
	err error
}

// listenCallback listens on 127.0.0.1:port.
func listenCallback(server string, port int) (*callback, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("cannot listen for the sign-in redirect on port %d (set oauth.redirect_port or --oauth-redirect-port to a free port): %w", port, err)
	}
	c := &callback{server: server, ln: ln, done: make(chan struct{}), result: make(chan callbackResult, 1)}
	c.srv = &http.Server{Handler: http.HandlerFunc(c.serveHTTP), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(c.done)
		_ = c.srv.Serve(ln)
	}()
	return c, nil
}

// expect sets the state of the authorization request under way.
func (c *callback) expect(state string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.state = state
}

// wait waits for the authorization response.
func (c *callback) wait(ctx context.Context) (*sdkauth.AuthorizationResult, error) {
	select {
	case r := <-c.result:
		return r.res, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the sign-in in the browser: %w", ctx.Err())
	}
}

// close stops listening and waits for the server goroutine.
func (c *callback) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = c.srv.Shutdown(ctx)
	<-c.done
}

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>mcpwrap sign-in</title>
<style>body{font-family:system-ui,sans-serif;max-width:32em;margin:4em auto;color:#222}</style></head>
<body><h1>{{.Title}}</h1><p>{{.Text}}</p></body></html>
`))

func (c *callback) page(w http.ResponseWriter, status int, title, text string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = pageTemplate.Execute(w, struct{ Title, Text string }{title, text})
}

func (c *callback) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/callback" || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	c.mu.Lock()
	state := c.state
	c.mu.Unlock()
	if state == "" || q.Get("state") != state {
		c.page(w, http.StatusBadRequest, "This sign-in link is not the one mcpwrap is waiting for",
			"Start the sign-in again from mcpwrap (mcpwrap login "+c.server+").")
		return
	}
	var res callbackResult
	if e := q.Get("error"); e != "" {
		res.err = &AuthorizationError{Code: e, Description: q.Get("error_description")}
		c.page(w, http.StatusOK, "Sign-in failed", "The authorization server said: "+res.err.Error()+". You may close this tab.")
	} else {
		res.res = &sdkauth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
		c.page(w, http.StatusOK, "Signed in to "+c.server, "mcpwrap has what it needs. You may close this tab.")
	}
	select {
	case c.result <- res:
	default: // a second response for the same request: the first one counts
	}
}

// AuthorizationError is an error response from the authorization endpoint
// (RFC 6749 §4.1.2.1), such as access_denied.
type AuthorizationError struct {
	Code        string
	Description string
}

func (e *AuthorizationError) Error() string {
	if e.Description != "" {
		return e.Code + ": " + e.Description
	}
	return e.Code
}
