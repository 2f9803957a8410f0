package clientconfig

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Install then Uninstall is covered by the golden files and the fuzz target;
// these are entries wrapped by hand, and broken ones.
func TestUninstall(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		want       string
		wantAction Action
		wantDetail string
	}{
		{
			name:       "stdio with flags Install does not write",
			in:         `{"mcpServers":{"s":{"command":"mcpwrap","args":["--allow-tools","read_*","--log-level=debug","-retry-refused","--","npx","srv"]}}}`,
			want:       `{"mcpServers":{"s":{"command":"npx","args":["srv"]}}}`,
			wantAction: Unwrap,
			wantDetail: "npx srv; dropped mcpwrap flags --allow-tools, --log-level, --retry-refused",
		},
		{
			name:       "stdio whose args follow the command keeps an empty args",
			in:         `{"mcpServers":{"s":{"command":"/bin/mcpwrap","args":["--","srv"]}}}`,
			want:       `{"mcpServers":{"s":{"command":"srv","args":[]}}}`,
			wantAction: Unwrap,
			wantDetail: "srv",
		},
		{
			name: "remote with literal headers and a reference to the user's own variable",
			in: `{"mcpServers":{"r":{"type":"stdio","command":"mcpwrap","args":["--url=https://h/mcp","--header","X-Team:  core ",` +
				`"--header","Authorization: ${GITHUB_TOKEN}"],"env":{"OTHER":"1"}}}}`,
			want:       `{"mcpServers":{"r":{"type":"http","url":"https://h/mcp","headers":{"X-Team":"core","Authorization":"${GITHUB_TOKEN}"},"env":{"OTHER":"1"}}}}`,
			wantAction: Unwrap,
			wantDetail: "https://h/mcp with headers X-Team, Authorization",
		},
		{
			name:       "header values come back out of env; env emptied elsewhere stays",
			in:         `{"mcpServers":{"r":{"env":{"V":"Bearer x"},"command":"mcpwrap","args":["--url","https://h/mcp","--header","A: ${V}"]}}}`,
			want:       `{"mcpServers":{"r":{"env":{},"url":"https://h/mcp","headers":{"A":"Bearer x"}}}}`,
			wantAction: Unwrap,
			wantDetail: "https://h/mcp with headers A",
		},
		{
			name:       "URL from env; an env right after the command that is emptied goes",
			in:         `{"mcpServers":{"r":{"args":["--url","${U}"],"command":"mcpwrap","env":{"U":"https://h/mcp?k=s3cret"}}}}`,
			want:       `{"mcpServers":{"r":{"url":"https://h/mcp?k=s3cret"}}}`,
			wantAction: Unwrap,
			wantDetail: "https://h/mcp?…",
		},
		{
			name:       "URL referring to a variable the env does not have stays a reference",
			in:         `{"mcpServers":{"r":{"command":"mcpwrap","args":["--url","${MY_URL}"],"env":{"OTHER":"1"}}}}`,
			want:       `{"mcpServers":{"r":{"url":"${MY_URL}","headers":{},"env":{"OTHER":"1"}}}}`,
			wantAction: Unwrap,
			wantDetail: "${MY_URL}",
		},
		{
			name:       "not mcpwrap",
			in:         `{"mcpServers":{"s":{"command":"npx","args":["--","srv"]}}}`,
			want:       `{"mcpServers":{"s":{"command":"npx","args":["--","srv"]}}}`,
			wantAction: Skip,
			wantDetail: "not wrapped",
		},
		{
			name:       "no command after --",
			in:         `{"mcpServers":{"s":{"command":"mcpwrap","args":["--name","s","--"]}}}`,
			want:       `{"mcpServers":{"s":{"command":"mcpwrap","args":["--name","s","--"]}}}`,
			wantAction: Skip,
			wantDetail: "runs mcpwrap, but not wrapped: no command after --",
		},
		{
			name:       "both a URL and a command",
			in:         `{"mcpServers":{"s":{"command":"mcpwrap","args":["--url","https://h","--","srv"]}}}`,
			want:       `{"mcpServers":{"s":{"command":"mcpwrap","args":["--url","https://h","--","srv"]}}}`,
			wantAction: Skip,
			wantDetail: "runs mcpwrap, but not wrapped: both --url and a command after --",
		},
		{
			name:       "flag without its value",
			in:         `{"mcpServers":{"s":{"command":"mcpwrap","args":["--url"]}}}`,
			want:       `{"mcpServers":{"s":{"command":"mcpwrap","args":["--url"]}}}`,
			wantAction: Skip,
			wantDetail: "runs mcpwrap, but not wrapped: flag --url has no value",
		},
		{
			name:       "header without a colon, which may be a secret, is not echoed",
			in:         `{"mcpServers":{"s":{"command":"mcpwrap","args":["--url","https://h","--header","s3cret"]}}}`,
			want:       `{"mcpServers":{"s":{"command":"mcpwrap","args":["--url","https://h","--header","s3cret"]}}}`,
			wantAction: Skip,
			wantDetail: "runs mcpwrap, but a --header is not NAME: VALUE",
		},
		{
			name:       "url already present",
			in:         `{"mcpServers":{"s":{"url":"https://old","command":"mcpwrap","args":["--url","https://h"]}}}`,
			want:       `{"mcpServers":{"s":{"url":"https://old","command":"mcpwrap","args":["--url","https://h"]}}}`,
			wantAction: Skip,
			wantDetail: "runs mcpwrap, but has url or headers already",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, plan, err := Uninstall([]byte(tt.in), Options{})
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(out))
			require.Len(t, plan, 1)
			assert.Equal(t, tt.wantAction, plan[0].Action)
			assert.Equal(t, tt.wantDetail, plan[0].Detail)
		})
	}
}

func TestParseWrapped(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    wrapped
		wantErr string
	}{
		{
			name: "stdio",
			args: []string{"--name", "x", "--", "npx", "--", "-y"},
			want: wrapped{command: raws("npx", "--", "-y")},
		},
		{
			name: "remote, values after = or as the next argument",
			args: []string{"-name", "x", "--transport=sse", "--url", "https://h", "--header=A: 1", "--header", "B: 2"},
			want: wrapped{url: []byte(`"https://h"`), transport: "sse", headers: []string{"A: 1", "B: 2"}},
		},
		{
			name: "a value that looks like a flag belongs to a known flag",
			args: []string{"--name", "--url", "--", "srv"},
			want: wrapped{command: raws("srv")},
		},
		{
			name:    "neither form",
			args:    []string{"--name", "x"},
			wantErr: errNotWrapped.Error(),
		},
		{
			name:    "positional argument before --",
			args:    []string{"srv", "--"},
			wantErr: "an argument before -- is not a flag",
		},
		{
			name:    "three dashes",
			args:    []string{"---url", "https://h"},
			wantErr: "an argument before -- is not a flag",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseWrapped(raws(tt.args...), tt.args)
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestHeaderEnvName(t *testing.T) {
	taken := map[string]bool{"MCPWRAP_HDR_MY_SERVER_X_API_KEY": true, "MCPWRAP_HDR_MY_SERVER_X_API_KEY_2": true}
	assert.Equal(t, "MCPWRAP_HDR_MY_SERVER_AUTHORIZATION",
		headerEnvName("my.server", "Authorization", func(n string) bool { return taken[n] }))
	assert.Equal(t, "MCPWRAP_HDR_MY_SERVER_X_API_KEY_3",
		headerEnvName("my server", "x-api-key", func(n string) bool { return taken[n] }))
	assert.Equal(t, "MCPWRAP_HDR_Z_RICH_K", headerEnvName("Zürich", "k", func(string) bool { return false }))
	assert.Equal(t, "MCPWRAP_URL_MY_SERVER_2",
		urlEnvName("my-server", func(n string) bool { return n == "MCPWRAP_URL_MY_SERVER" }))
}

func TestRunsMCPRemote(t *testing.T) {
	tests := []struct {
		name    string
		command string
		args    []string
		want    bool
	}{
		{name: "npx", command: "npx", args: []string{"-y", "mcp-remote", "https://h/sse"}, want: true},
		{name: "versioned", command: "pnpm", args: []string{"dlx", "mcp-remote@0.1.29", "https://h"}, want: true},
		{name: "installed", command: `C:\npm\mcp-remote.cmd`, args: []string{"https://h"}, want: true},
		{name: "other package", command: "npx", args: []string{"-y", "mcp-remote-proxy"}},
		{name: "URL mentioning it", command: "npx", args: []string{"srv", "https://h/mcp-remote"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, runsMCPRemote(tt.command, tt.args))
		})
	}
}

func TestChangeAndRedaction(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{name: "plain URL", got: redactURL("https://h/mcp"), want: "https://h/mcp"},
		{name: "credentials dropped", got: redactURL("https://user:pw@h/mcp?api_key=k#frag"), want: "https://h/mcp?…"},
		{name: "unparsable URL", got: redactURL("http://[::1"), want: "(unparsable URL)"},
		{name: "env reference", got: redactURL("${MY_URL}"), want: "${MY_URL}"},
		{name: "quoted words", got: commandLine("/My Apps/srv", []string{"", "a b", "$HOME", "plain"}),
			want: `"/My Apps/srv" "" "a b" "$HOME" plain`},
		{name: "plan line", got: Change{Server: "s", Action: Skip, Detail: "why"}.String(), want: "skip   s: why"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.got)
		})
	}
}

// raws encodes each string as a raw JSON string.
func raws(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = encodeString(s)
	}
	return out
}

// TestUninstallKeepsTheEntryStyle: uninstall changes only the bytes it
// must, in the style of the entry it rewrites: args on one line (the
// README's own example), an entry on one line, an inline env; the file is
// indented by 2 spaces.
func TestUninstallKeepsTheEntryStyle(t *testing.T) {
	file := func(entry string) string {
		return "{\n  \"mcpServers\": {\n    \"s\": " + entry + "\n  }\n}\n"
	}
	tests := []struct {
		name string
		in   string // the entry
		want string
	}{
		{
			name: "args on one line",
			in: "{\n      \"command\": \"/home/me/go/bin/mcpwrap\",\n" +
				"      \"args\": [\"--name\", \"filesystem\", \"--\", \"npx\", \"-y\", \"@modelcontextprotocol/server-filesystem\", \"/home/me\"]\n    }",
			want: "{\n      \"command\": \"npx\",\n" +
				"      \"args\": [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"/home/me\"]\n    }",
		},
		{
			name: "an entry on one line",
			in:   `{"command": "mcpwrap", "args": ["--name", "s", "--", "npx", "srv"], "env": {"A": "1"}}`,
			want: `{"command": "npx", "args": ["srv"], "env": {"A": "1"}}`,
		},
		{
			name: "padded brackets",
			in:   `{ "command": "mcpwrap", "args": [ "--", "uvx", "mcp-server-git" ] }`,
			want: `{ "command": "uvx", "args": [ "mcp-server-git" ] }`,
		},
		{
			name: "a remote entry on one line",
			in: `{"type": "stdio", "command": "mcpwrap", "args": ["--name", "r", "--transport", "sse", "--url", "${U}", "--header", "Authorization: ${H}"], ` +
				`"env": {"U": "https://h/sse", "H": "Bearer x"}}`,
			want: `{"type": "sse", "url": "https://h/sse", "headers": {"Authorization": "Bearer x"}}`,
		},
		{
			name: "an inline env in an indented entry",
			in:   "{\n      \"command\": \"mcpwrap\",\n      \"args\": [\"--\", \"node\", \"x.js\"],\n      \"env\": {\"DEBUG\": \"1\", \"B\": \"2\"}\n    }",
			want: "{\n      \"command\": \"node\",\n      \"args\": [\"x.js\"],\n      \"env\": {\"DEBUG\": \"1\", \"B\": \"2\"}\n    }",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, plan, err := Uninstall([]byte(file(tt.in)), Options{})
			require.NoError(t, err)
			require.Len(t, plan, 1)
			require.Equal(t, Unwrap, plan[0].Action, plan[0].Detail)
			assert.Equal(t, file(tt.want), string(out))
		})
	}
}
