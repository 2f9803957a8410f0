package clientconfig

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLocations(t *testing.T) {
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	tests := []struct {
		name     string
		client   string
		platform Platform
		want     []Location
	}{
		{
			name:     "macOS, every client",
			client:   AllClients,
			platform: Platform{GOOS: "darwin", Home: "/Users/me", Dir: "/Users/me/src/app"},
			want: []Location{
				{ClaudeDesktop, "/Users/me/Library/Application Support/Claude/claude_desktop_config.json"},
				{ClaudeCode, "/Users/me/.claude.json"},
				{ClaudeCodeProject, "/Users/me/src/app/.mcp.json"},
				{Cursor, "/Users/me/.cursor/mcp.json"},
				{CursorProject, "/Users/me/src/app/.cursor/mcp.json"},
			},
		},
		{
			name:   "Windows, APPDATA set",
			client: ClaudeDesktop,
			platform: Platform{GOOS: "windows", Home: `C:\Users\me`,
				Getenv: env(map[string]string{"APPDATA": `D:\Roaming`})},
			want: []Location{{ClaudeDesktop, `D:\Roaming\Claude\claude_desktop_config.json`}},
		},
		{
			name:     "Windows, APPDATA unset",
			client:   "",
			platform: Platform{GOOS: "windows", Home: `C:\Users\me`},
			want: []Location{
				{ClaudeDesktop, `C:\Users\me\AppData\Roaming\Claude\claude_desktop_config.json`},
				{ClaudeCode, `C:\Users\me\.claude.json`},
				{Cursor, `C:\Users\me\.cursor\mcp.json`},
			},
		},
		{
			name:     "Linux, XDG_CONFIG_HOME set",
			client:   ClaudeDesktop,
			platform: Platform{GOOS: "linux", Home: "/home/me", Getenv: env(map[string]string{"XDG_CONFIG_HOME": "/cfg"})},
			want:     []Location{{ClaudeDesktop, "/cfg/Claude/claude_desktop_config.json"}},
		},
		{
			name:     "Linux, defaults",
			client:   ClaudeDesktop,
			platform: Platform{GOOS: "linux", Home: "/home/me"},
			want:     []Location{{ClaudeDesktop, "/home/me/.config/Claude/claude_desktop_config.json"}},
		},
		{
			name:   "Claude Code with CLAUDE_CONFIG_DIR",
			client: ClaudeCode,
			platform: Platform{GOOS: "linux", Home: "/home/me", Dir: "/work",
				Getenv: env(map[string]string{"CLAUDE_CONFIG_DIR": "/home/me/.claude-work"})},
			want: []Location{{ClaudeCode, "/home/me/.claude-work/.claude.json"}, {ClaudeCodeProject, "/work/.mcp.json"}},
		},
		{
			name:     "a project's files alone",
			client:   ClaudeCodeProject,
			platform: Platform{GOOS: "linux", Home: "/home/me", Dir: "/work"},
			want:     []Location{{ClaudeCodeProject, "/work/.mcp.json"}},
		},
		{
			name:     "Cursor's project file alone",
			client:   CursorProject,
			platform: Platform{GOOS: "linux", Home: "/home/me", Dir: "/work"},
			want:     []Location{{CursorProject, "/work/.cursor/mcp.json"}},
		},
		{
			name:     "Cursor run from the home directory lists its file once",
			client:   Cursor,
			platform: Platform{GOOS: "linux", Home: "/home/me", Dir: "/home/me"},
			want:     []Location{{Cursor, "/home/me/.cursor/mcp.json"}},
		},
		{
			name:     "zero platform finds nothing",
			client:   AllClients,
			platform: Platform{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Locations(tt.client, tt.platform)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestLocationsUnknownClient(t *testing.T) {
	_, err := Locations("vscode", Platform{Home: "/home/me"})
	require.ErrorIs(t, err, ErrUnknownClient)
	assert.ErrorContains(t, err, `"vscode": want one of claude-desktop, claude-code, cursor, claude-code-project, cursor-project or all`)
}

func TestLocationProject(t *testing.T) {
	for client, project := range map[string]bool{ClaudeDesktop: false, ClaudeCode: false, Cursor: false,
		ClaudeCodeProject: true, CursorProject: true, "": false} {
		assert.Equal(t, project, Location{Client: client}.Project(), client)
	}
}

func TestLocationsDefaultsToThisOS(t *testing.T) {
	got, err := Locations(ClaudeCode, Platform{Home: "/h"})
	require.NoError(t, err)
	want, err := Locations(ClaudeCode, Platform{GOOS: runtime.GOOS, Home: "/h"})
	require.NoError(t, err)
	assert.Equal(t, want, got)
}
