package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/doctor"
)

func TestEntryOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		entry   doctor.Entry
		want    wrapOptions
		wantErr string
	}{
		{
			name:  "stdio: runs as the client starts it, under the entry's name",
			entry: doctor.Entry{Name: "fs", Command: "npx", Args: []string{"-y", "srv"}, Env: map[string]string{"ROOT": "/x"}},
			want:  wrapOptions{name: "fs", command: []string{"npx", "-y", "srv"}, env: map[string]string{"ROOT": "/x"}},
		},
		{
			name: "remote: headers in a stable order, the type as --transport",
			entry: doctor.Entry{Name: "api", Type: "sse", URL: "https://h/sse",
				Headers: map[string]string{"X-Team": "core", "Authorization": "Bearer ${TOKEN}"}},
			want: wrapOptions{name: "api", url: "https://h/sse", transport: "sse",
				headers: headerFlags{"Authorization: Bearer ${TOKEN}", "X-Team: core"}},
		},
		{
			name: "wrapped: its mcpwrap flags apply, --name first of all",
			entry: doctor.Entry{Name: "key", Command: "/usr/local/bin/mcpwrap",
				Args: []string{"--name", "filesystem", "--allow-tools", "read_*", "--ready-timeout", "5s", "--", "npx", "srv"},
				Env:  map[string]string{"A": "1"}},
			want: wrapOptions{name: "filesystem", allowTools: "read_*", readyTimeout: 5e9, command: []string{"npx", "srv"},
				env: map[string]string{"A": "1"}, log: logOptions{level: "info", format: "text"}},
		},
		{
			name: "wrapped remote, as install writes it",
			entry: doctor.Entry{Name: "api", Command: "mcpwrap",
				Args: []string{"--name", "api", "--log-file", "/l/api.log", "--transport", "http", "--url", "https://h/mcp", "--header", "Authorization: ${MCPWRAP_HDR_API_AUTHORIZATION}"},
				Env:  map[string]string{"MCPWRAP_HDR_API_AUTHORIZATION": "Bearer x"}},
			want: wrapOptions{name: "api", url: "https://h/mcp", transport: "http", command: []string{},
				headers: headerFlags{"Authorization: ${MCPWRAP_HDR_API_AUTHORIZATION}"},
				env:     map[string]string{"MCPWRAP_HDR_API_AUTHORIZATION": "Bearer x"},
				log:     logOptions{level: "info", format: "text", file: "/l/api.log"}},
		},
		{
			name:    "wrapped with a flag mcpwrap does not know",
			entry:   doctor.Entry{Name: "x", Command: "mcpwrap", Args: []string{"--bogus", "--", "srv"}},
			wantErr: "unknown flag --bogus",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := entryOptions(tt.entry)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestNameClashes(t *testing.T) {
	t.Parallel()
	fs := []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/me"}
	tests := []struct {
		name string
		uses []serverUse
		want []string
	}{
		{name: "distinct names", uses: []serverUse{{name: "a", client: "cursor", command: fs}, {name: "b", client: "cursor", command: []string{"x"}}}},
		{name: "one server in two clients", uses: []serverUse{{name: "fs", client: "cursor", command: fs}, {name: "fs", client: "claude-code", command: fs}}},
		{
			name: "one name, two commands",
			uses: []serverUse{
				{name: "index", client: "claude-desktop", command: []string{"node", "/x/server-filesystem/dist/index.js", "--token", "s3cret"}},
				{name: "index", client: "cursor", command: []string{"node", "/x/server-memory/dist/index.js"}},
			},
			want: []string{`the name "index" is used for 2 different servers: node /x/server-filesystem (claude-desktop), node /x/server-memory (cursor); they share tool approvals and toggles, so give each its own --name`},
		},
		{
			name: "one name, two URLs",
			uses: []serverUse{{name: "api", client: "cursor", url: "https://a.example/mcp"}, {name: "api", client: "cursor", url: "https://b.example/mcp"}},
			want: []string{`the name "api" is used for 2 different servers: https://a.example (cursor), https://b.example (cursor); they share tool approvals and toggles, so give each its own --name`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, nameClashes(tt.uses))
		})
	}
}
