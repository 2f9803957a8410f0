// Package auth is mcpwrap's OAuth client for remote upstreams: the MCP
// authorization flow (built on the go-sdk's auth.AuthorizationCodeHandler
// and oauthex), the user's token and registration store, the loopback
// redirect the user signs in through, and the browser launch.
//
// A [Client] holds the sign-in state of one remote server in one process.
// Its [Client.Transport] adds the access token to every request, refreshes
// an expired token (once across every mcpwrap process: a file lock), and
// turns a server that wants a sign-in into a [resilience.Error] of class
// denied with code [resilience.CodeLoginRequired], starting at most one
// browser sign-in per process. [Client.Login] runs the flow in the
// foreground (mcpwrap login). Tokens are secrets: they never appear in a
// log, an error or a command line.
package auth

import "errors"

// Errors reported by the package. They never carry a token.
var (
	// ErrNoToken means there is no usable token for the server: it was
	// never signed in, signed out, or its refresh token was rejected.
	ErrNoToken = errors.New("not signed in")
	// ErrNoBrowser means no browser may be opened ($MCPWRAP_BROWSER=none).
	ErrNoBrowser = errors.New("opening a browser is switched off (MCPWRAP_BROWSER=none)")
	// ErrNotWebPage means an address was refused before it reached a
	// browser launcher: it is not a web page (see [CheckWebPage]).
	ErrNotWebPage = errors.New("the sign-in address is not a web page")
	// ErrLoginBusy means another mcpwrap process is running a sign-in for
	// the same server.
	ErrLoginBusy = errors.New("a sign-in for this server is under way in another mcpwrap process")
	// ErrNotProtected means the server answered without asking for a
	// sign-in.
	ErrNotProtected = errors.New("the server did not ask for a sign-in")
)
