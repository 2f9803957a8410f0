// Package clientconfig is the engine of `mcpwrap install` and `mcpwrap
// uninstall`: it finds the MCP client config files ([Locations]), puts
// mcpwrap in front of their servers ([Install]) or takes it away again
// ([Uninstall]), and writes the result safely ([WriteWithBackup]).
//
// # What Install writes
//
// A stdio entry keeps its env and every other key; its command and args
// become an mcpwrap command line:
//
//	"fs": {"command": "npx", "args": ["-y", "server-fs", "/home/me"], "env": {...}}
//	"fs": {"command": "/abs/mcpwrap", "args": ["--name", "fs", "--", "npx", "-y", "server-fs", "/home/me"], "env": {...}}
//
// A remote entry (url, type http, sse or none, and
// headers) becomes a stdio entry whose URL and header values move into env,
// so that no secret is on a command line (a URL may carry one in its user
// info, its query or its path); mcpwrap expands the ${VAR} references:
//
//	"api": {"type": "http", "url": "https://x/mcp?key=k", "headers": {"Authorization": "Bearer s3cret"}}
//	"api": {"type": "stdio", "command": "/abs/mcpwrap",
//	        "args": ["--name", "api", "--transport", "http", "--url", "${MCPWRAP_URL_API}",
//	                 "--header", "Authorization: ${MCPWRAP_HDR_API_AUTHORIZATION}"],
//	        "env": {"MCPWRAP_URL_API": "https://x/mcp?key=k",
//	                "MCPWRAP_HDR_API_AUTHORIZATION": "Bearer s3cret"}}
//
// A remote entry without an Authorization header signs in through mcpwrap
// (its OAuth client); the plan says to run `mcpwrap login KEY` once.
//
// An entry running mcp-remote becomes a native --url entry with its options
// mapped: the URL and --header (a literal value moves to env, a ${VAR}
// reference stays, as mcpwrap expands it the way mcp-remote does),
// --transport (http-first/http-only: http; sse-first/sse-only: sse), the
// callback port (--oauth-redirect-port), --static-oauth-client-info given
// inline (--oauth-client-id, and the secret in env behind
// --oauth-client-secret-env) and --client-metadata-url; --allow-http,
// --debug, --silent and --auth-timeout need nothing. The original command
// line is kept whole in env (MCPWRAP_MCP_REMOTE_KEY, a JSON array) for
// Uninstall. Any other mcp-remote option (--resource, --header-file, ...)
// keeps the entry an mcp-remote stdio child, the plan says which; so does
// [Options.KeepMCPRemote].
//
// The URL and every header value move, also one that holds ${VAR}
// references ("Bearer ${TOKEN}"): a client that expands env values as it
// expands URLs and headers (Claude Code) expands them there, and mcpwrap
// expands what is left as the client would have ([MovedValues]), so the
// entry sends the same bytes either way. A variable name already in the
// entry's env gets a suffix (_2, _3...).
// --transport is written only when the entry has a type. With
// [Options.LogDir] set, --log-file LOGDIR/KEY.log follows --name: the
// sidecar then logs to a file of its own.
//
// An entry counts as wrapped when its command's base name is mcpwrap (or
// mcpwrap.exe) and its args are flags then "--" and a command, or include
// --url. Install leaves wrapped entries alone, so running it twice changes
// nothing the second time.
//
// # Lossless uninstall
//
// Uninstall rebuilds the original entry from the wrapped one: keys keep
// their places (command becomes url again and args becomes headers); keys
// Install added are removed by where it put them (missing args go just
// before the command, a missing env just after the later of args and the
// command). Only the members Install or Uninstall changes are rewritten,
// each laid out like the value it replaces: members and elements kept keep
// their bytes, and the whitespace around items (after an opening bracket,
// between items, after a colon) is the replaced value's, so an entry on one
// line stays on one line and args on one line in an indented file stay on
// one line. A value of another kind than the one it replaces (args for
// headers) is on one line or indented as that one was; a new value (an env
// or args Install adds) is indented like the file (read off its first key,
// with its line endings) in an indented entry, and on one line in an entry
// on one line. Every other byte of the file, the trailing
// newline included, is kept, and every key, string and number keeps the
// bytes it was written with. So Install followed by Uninstall gives back
// the original file byte for byte, and Uninstall of an entry wrapped by
// hand keeps its style.
//
// What is not preserved:
//   - In an object or array whose separators differ from one another (a
//     line break after some commas only), the separators shift with the
//     items Install adds or Uninstall removes.
//   - Install skips, with the reason in the plan, the three shapes it could
//     not tell apart from what it adds: an empty "args" just before
//     "command", an empty "headers" just before "url", and an empty "env"
//     just after the later of "url" and "headers" of a remote entry.
//   - Uninstall of an entry wrapped by hand drops mcpwrap flags other than
//     --name, --url, --header, --transport and --log-file (the plan names
//     them); a URL or header whose value is not a ${VAR} of the entry's env
//     comes back with the flag's literal value.
//
// A file with comments or trailing commas is refused with a [*ParseError]
// naming the position. Every function here is safe for concurrent use.
package clientconfig
