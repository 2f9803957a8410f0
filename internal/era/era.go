// Package era holds the facts of MCP's two protocol eras that several
// packages need: the versions and the _meta keys of the stateless era
// (SEP-2575). It is their one owner, and a leaf of constants: the era
// bridge (internal/erabridge) imports middleware, so middleware, which
// needs a few of these facts too, could not import them from there.
//
// middleware may import it because it is internal to this module; its
// exported API never names it (the constants are untyped strings).
package era

// Protocol versions. Versions are dates, so strings compare in order.
const (
	// SessionVersion is the latest version of the session era (initialize,
	// a session, server requests mid-call): the one mcpwrap speaks to a
	// server of that era and asks for as a client.
	SessionVersion = "2025-11-25"
	// StatelessVersion is the first version of the stateless era
	// (SEP-2575): no initialize, a _meta on every request, the Mcp-Method
	// and Mcp-Name headers over HTTP, no standalone GET stream.
	StatelessVersion = "2026-07-28"
)

// SessionVersions are the session-era versions a client may ask for and
// be answered with, newest first.
var SessionVersions = []string{SessionVersion, "2025-06-18", "2025-03-26", "2024-11-05"}

// IsStateless reports whether version is of the stateless era.
func IsStateless(version string) bool { return version >= StatelessVersion }

// The _meta keys of the stateless era (go-sdk mcp/protocol.go MetaKey*).
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
)

// ClientMetaKeys are the _meta members with which a stateless request
// describes its client in place of a handshake.
var ClientMetaKeys = []string{MetaProtocolVersion, MetaClientInfo, MetaClientCapabilities}

// Describe shows the protocol versions a client and a server speak to a
// person: the one version when they are the same, "client -> server"
// when mcpwrap translates between them, "" when neither is known.
func Describe(client, server string) string {
	switch {
	case client == server:
		return client
	case client == "" || server == "":
		return client + server
	}
	return client + " -> " + server
}
