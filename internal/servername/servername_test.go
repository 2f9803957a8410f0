package servername

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDerive(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		command []string
		url     string
		want    string
	}{
		{name: "npx scoped package", command: []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/me"}, want: "filesystem"},
		{name: "npx scoped package with version", command: []string{"npx", "-y", "@modelcontextprotocol/server-memory@2025.4.25"}, want: "memory"},
		{name: "npx unscoped package with version", command: []string{"npx", "-y", "mcp-server-kubernetes@1.0.0"}, want: "kubernetes"},
		{name: "npx generic package name takes the scope", command: []string{"npx", "@acme/mcp"}, want: "acme"},
		{name: "npx --package", command: []string{"npx", "--package=@playwright/mcp@latest", "playwright-mcp"}, want: "playwright"},
		{name: "npx -p", command: []string{"npx", "-p", "@upstash/context7-mcp", "context7"}, want: "context7"},
		{name: "Windows npx.cmd", command: []string{`C:\Program Files\nodejs\npx.cmd`, "-y", "@modelcontextprotocol/server-github"}, want: "github"},
		{name: "Windows cmd /c npx", command: []string{"cmd", "/c", "npx", "-y", "@modelcontextprotocol/server-github"}, want: "github"},
		{name: "pnpm dlx", command: []string{"pnpm", "dlx", "@modelcontextprotocol/server-everything"}, want: "everything"},
		{name: "bunx", command: []string{"bunx", "tavily-mcp@0.1.4"}, want: "tavily"},
		{name: "node script in a package's dist", command: []string{"node", "/x/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", "/tmp"}, want: "filesystem"},
		{name: "node script of another package", command: []string{"node", "/x/node_modules/@modelcontextprotocol/server-memory/dist/index.js"}, want: "memory"},
		{name: "node script named for itself", command: []string{"/usr/bin/node", "/srv/weather.mjs"}, want: "weather"},
		{name: "node script in src of a project", command: []string{"node", "/home/me/code/notes-server/src/main.ts"}, want: "notes"},
		{name: "node .bin shim", command: []string{"/x/node_modules/.bin/mcp-server-filesystem", "/tmp"}, want: "filesystem"},
		{name: "uvx", command: []string{"uvx", "mcp-server-fetch"}, want: "fetch"},
		{name: "uvx with a version pin", command: []string{"uvx", "mcp-server-git==0.6.2", "--repository", "."}, want: "git"},
		{name: "uvx --from", command: []string{"uvx", "--from", "git+https://github.com/acme/weather-mcp.git", "weather"}, want: "weather"},
		{name: "pipx run", command: []string{"pipx", "run", "mcp-server-time"}, want: "time"},
		{name: "pipx run --spec", command: []string{"pipx", "run", "--spec", "mcp-obsidian>=0.2", "mcp-obsidian"}, want: "obsidian"},
		{name: "uv run a script in a directory", command: []string{"uv", "run", "--directory", "/home/me/weather", "server.py"}, want: "weather"},
		{name: "uv --directory before run", command: []string{"uv", "--directory", "/home/me/weather", "run", "main.py"}, want: "weather"},
		{name: "python -m", command: []string{"python3", "-m", "mcp_server_git"}, want: "git"},
		{name: "python script", command: []string{"python", "/opt/tools/jira_server.py"}, want: "jira_server"},
		{name: "python generic script", command: []string{"/usr/bin/python3.12", "/opt/servers/jira/server.py"}, want: "jira"},
		{name: "docker run image", command: []string{"docker", "run", "-i", "--rm", "-e", "GITHUB_TOKEN", "ghcr.io/github/github-mcp-server"}, want: "github"},
		{name: "docker run image with tag and options", command: []string{"docker", "run", "--rm", "-i", "-v", "/a:/b", "--name=x", "mcp/fetch:latest"}, want: "fetch"},
		{name: "docker run image by digest", command: []string{"podman", "run", "-i", "mcp/postgres@sha256:abc", "postgresql://db"}, want: "postgres"},
		{name: "plain program", command: []string{"/usr/local/bin/github-mcp-server", "stdio"}, want: "github"},
		{name: "deno run", command: []string{"deno", "run", "-A", "/srv/weather/main.ts"}, want: "weather"},
		{name: "url host", url: "https://mcp.linear.app/sse", want: "mcp.linear.app"},
		{name: "url www", url: "https://www.example.com/mcp", want: "example.com"},
		{name: "loopback url keeps the port", url: "http://127.0.0.1:8931/mcp", want: "127.0.0.1-8931"},
		{name: "localhost url keeps the port", url: "http://localhost:3000/mcp", want: "localhost-3000"},
		{name: "url with no host", url: "${MCPWRAP_URL}", want: "remote"},
		{name: "nothing identifying", command: []string{"npx"}, want: "npx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, Derive(tt.command, tt.url))
		})
	}
}

// TestTwoIndexScriptsDiffer: two servers whose entry point is index.js get
// different default names (both used to be "index").
func TestTwoIndexScriptsDiffer(t *testing.T) {
	t.Parallel()
	a := Derive([]string{"node", "e2e/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", "/tmp"}, "")
	b := Derive([]string{"node", "e2e/node_modules/@modelcontextprotocol/server-memory/dist/index.js"}, "")
	assert.NotEqual(t, a, b)
	assert.NotEqual(t, "index", a)
}

func TestDescribeAndDigest(t *testing.T) {
	t.Parallel()
	cmd := []string{"npx", "-y", "@modelcontextprotocol/server-github", "--token", "s3cret"}
	assert.Equal(t, "npx @modelcontextprotocol/server-github", Identify(cmd, "").Describe())
	assert.Equal(t, "https://api.example.com", Identify(nil, "https://user:pw@api.example.com/mcp?key=s3cret").Describe())
	assert.Equal(t, "node …/@modelcontextprotocol/server-memory",
		Identify([]string{"node", "/home/me/node_modules/@modelcontextprotocol/server-memory/dist/index.js"}, "").Describe())
	assert.Equal(t, "python3 …/servers/weather.py", Identify([]string{"python3", "/opt/servers/weather.py"}, "").Describe())
	assert.Equal(t, "docker ghcr.io/github/github-mcp-server", Identify([]string{"docker", "run", "-i", "ghcr.io/github/github-mcp-server"}, "").Describe())
	// A package fetched from a URL: its token or path is not shown.
	assert.Equal(t, "uvx git+https://github.com", Identify([]string{"uvx", "--from", "git+https://x-access-token:s3cret@github.com/o/r.git", "srv"}, "").Describe())
	assert.Equal(t, "npx https://registry.example", Identify([]string{"npx", "-y", "https://registry.example/s3cret/pkg.tgz"}, "").Describe())
	assert.NotContains(t, Digest(cmd, ""), "s3cret")
	assert.Equal(t, Digest(cmd, ""), Digest(append([]string(nil), cmd...), ""))
	assert.NotEqual(t, Digest(cmd, ""), Digest(cmd[:4], ""))
	assert.NotEqual(t, Digest(nil, "https://a"), Digest(nil, "https://b"))
}
