// Package oauthmeta tells whether a remote MCP server that asked for a
// Bearer token offers any way to sign in: OAuth protected-resource
// metadata (RFC 9728) or authorization-server metadata (RFC 8414, OpenID
// Connect Discovery) where the MCP authorization spec has a client look,
// or, with neither, the default endpoints of the 2025-03-26 spec at its
// origin (/authorize, /token, /register). A server with none of these
// wants credentials configured by hand (an API key in a header), and
// telling the user to sign in would send them to a command that can only
// fail.
//
// It only looks for the documents; reading them is the sign-in's business
// (the go-sdk's handler, in internal/auth).
package oauthmeta

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// maxDocumentBytes bounds what is read of one candidate document.
const maxDocumentBytes = 1 << 20

// Offered reports whether the server at serverURL (its MCP endpoint)
// offers OAuth metadata: at resourceMetadata (the resource_metadata of its
// Bearer challenge; "" when it gave none), at the well-known
// protected-resource locations of serverURL, or at the well-known
// authorization-server locations of its origin (where the 2025-03-26
// spec's clients look when there is no protected-resource document).
//
// A document counts when it answers 200 with a JSON object. When every
// location answered without one (a 4xx, an HTML page), the server may
// still have the 2025-03-26 default endpoints, with which that spec's
// clients sign in when there is no metadata: see [defaultEndpoints].
// Offered reports false only when it has none either: a location that
// could not be asked (a network error, a 5xx) leaves the question open,
// and then it reports true, so that a sign-in is not ruled out by an
// outage. Only GET requests are sent (nothing is registered); client
// sends them; ctx bounds them.
func Offered(ctx context.Context, client *http.Client, serverURL, resourceMetadata string) bool {
	u, err := url.Parse(serverURL)
	if err != nil || u.Host == "" {
		return true // not for this package to judge
	}
	open := false // a location could not be asked
	for _, loc := range locations(u, resourceMetadata) {
		switch found, answered := fetch(ctx, client, loc); {
		case found:
			return true
		case !answered:
			open = true
		}
	}
	if open {
		return true
	}
	return defaultEndpoints(ctx, client, (&url.URL{Scheme: u.Scheme, Host: u.Host}).String())
}

// defaultEndpoints reports whether the server at origin may have the
// default endpoints of the 2025-03-26 spec (its authorization base URL is
// the origin): whether GET /authorize, without parameters and without
// following a redirect, answers as an authorization endpoint may (a
// redirect to a login page, an OAuth error, a page), unlike a path that
// cannot exist (a catch-all's answer to every path). It is asked rather
// than /register or /token, which are POSTed to and may change state.
// An /authorize that fails (a 5xx) or cannot be asked leaves the question
// open; one that is missing (404, 405, 410) or behind the gate the MCP
// endpoint is behind (401, 403: an authorization endpoint is reached
// without a token) is not there.
func defaultEndpoints(ctx context.Context, client *http.Client, origin string) bool {
	noFollow := *client
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	got, err := probe(ctx, &noFollow, origin+"/authorize")
	switch {
	case err != nil || got.status >= 500:
		return true
	case got.status == http.StatusUnauthorized, got.status == http.StatusForbidden,
		got.status == http.StatusNotFound, got.status == http.StatusMethodNotAllowed, got.status == http.StatusGone:
		return false
	}
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	control, err := probe(ctx, &noFollow, origin+"/mcpwrap-no-such-path-"+hex.EncodeToString(nonce[:]))
	return err != nil || got != control
}

// answer is what a probe tells apart: the status and the media type.
type answer struct {
	status    int
	mediaType string
}

// probe GETs loc and returns its answer, its body unread.
func probe(ctx context.Context, client *http.Client, loc string) (answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc, nil)
	if err != nil {
		return answer{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return answer{}, err
	}
	resp.Body.Close()
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return answer{status: resp.StatusCode, mediaType: mt}, nil
}

// locations lists where metadata may be, in the order clients look.
func locations(u *url.URL, resourceMetadata string) []string {
	origin := (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
	var locs []string
	if resourceMetadata != "" {
		locs = append(locs, resourceMetadata)
	}
	if path := strings.Trim(u.Path, "/"); path != "" {
		locs = append(locs, origin+"/.well-known/oauth-protected-resource/"+path)
	}
	return append(locs,
		origin+"/.well-known/oauth-protected-resource",
		origin+"/.well-known/oauth-authorization-server",
		origin+"/.well-known/openid-configuration",
	)
}

// fetch asks loc for a metadata document. found: it answered with one;
// answered: it gave a definite answer, with one or without.
func fetch(ctx context.Context, client *http.Client, loc string) (found, answered bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc, nil)
	if err != nil {
		return false, true // a resource_metadata that is no URL offers nothing
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return false, false
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 500:
		return false, false
	case resp.StatusCode != http.StatusOK:
		return false, true
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		return false, true // a catch-all's HTML page
	}
	var doc map[string]json.RawMessage
	if json.NewDecoder(io.LimitReader(resp.Body, maxDocumentBytes)).Decode(&doc) != nil {
		return false, true
	}
	return true, true
}
