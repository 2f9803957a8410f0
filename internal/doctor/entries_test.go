package doctor

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadEntries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		data    string
		project string
		want    []Entry
		wantErr string
	}{
		{
			name: "stdio and remote, in file order",
			data: `{"mcpServers": {
				"zeta": {"command": "npx", "args": ["-y", "server-fs", "/home/me"], "env": {"ROOT": "/home/me"}},
				"alpha": {"type": "http", "url": "https://x/mcp", "headers": {"Authorization": "Bearer s3cret"}}
			}, "other": true}`,
			want: []Entry{
				{Name: "zeta", Command: "npx", Args: []string{"-y", "server-fs", "/home/me"}, Env: map[string]string{"ROOT": "/home/me"}},
				{Name: "alpha", Type: "http", URL: "https://x/mcp", Headers: map[string]string{"Authorization": "Bearer s3cret"}},
			},
		},
		{
			name: "Claude Code: the user's servers, then the current project's",
			data: `{"mcpServers": {"u": {"command": "u"}}, "projects": {
				"/work/a": {"mcpServers": {"pa": {"command": "pa"}}},
				"/work/b": {"mcpServers": {"pb": {"command": "pb"}}}
			}}`,
			project: "/work/b",
			want:    []Entry{{Name: "u", Command: "u"}, {Name: "pb", Project: "/work/b", Command: "pb"}},
		},
		{
			name:    "a project with no servers of its own",
			data:    `{"mcpServers": {"u": {"command": "u"}}, "projects": {"/work/a": {"allowedTools": []}}}`,
			project: "/work/a",
			want:    []Entry{{Name: "u", Command: "u"}},
		},
		{
			name:    "no servers at all",
			data:    `{"theme": "dark"}`,
			wantErr: `no "mcpServers" in the file`,
		},
		{
			name:    "an entry with neither command nor url",
			data:    `{"mcpServers": {"odd": {"args": ["x"]}}}`,
			wantErr: `server "odd" has neither command nor url`,
		},
		{
			name:    "not JSON",
			data:    `{"mcpServers": {`,
			wantErr: "unexpected end of JSON input",
		},
		{
			name:    "mcpServers not an object",
			data:    `{"mcpServers": []}`,
			wantErr: `"mcpServers": not an object`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ReadEntries([]byte(tt.data), tt.project)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestEntryKinds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		entry       Entry
		wantRemote  bool
		wantWrapped bool
	}{
		{entry: Entry{Command: "npx"}},
		{entry: Entry{URL: "https://x/mcp"}, wantRemote: true},
		{entry: Entry{Command: "/usr/local/bin/mcpwrap", Args: []string{"--", "npx"}}, wantWrapped: true},
		{entry: Entry{Command: `C:\tools\MCPWRAP.EXE`, Args: []string{"--name=x", "--url=https://x/mcp"}}, wantWrapped: true},
		{entry: Entry{Command: "mcpwrap", Args: []string{"-url", "https://x/mcp"}}, wantWrapped: true},
		{entry: Entry{Command: "mcpwrap", Args: []string{"demo-server", "--", "x"}}},
		{entry: Entry{Command: "mcpwrap", Args: []string{"--name", "x"}}},
		{entry: Entry{Command: "mcpwrap"}},
		{entry: Entry{Command: "mcpwrapper"}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.wantRemote, tt.entry.Remote(), "%+v", tt.entry)
		assert.Equal(t, tt.wantWrapped, tt.entry.Wrapped(), "%+v", tt.entry)
	}
}
