package state

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFileName(t *testing.T) {
	tests := []struct {
		server string
		plain  bool // the name is its own file name
		prefix string
	}{
		{server: "filesystem", plain: true},
		{server: "api.githubcopilot.com", plain: true},
		{server: "server-filesystem_2", plain: true},
		{server: "GitHub", prefix: "github~"},
		{server: "github~0123456789abcdef", prefix: "github_0123456789abcdef~"},
		{server: "Linear Cloud", prefix: "linear_cloud~"},
		{server: "../../etc/passwd", prefix: "______etc_passwd~"},
		{server: ".hidden", prefix: "_hidden~"},
		{server: "ends.", prefix: "ends_~"},
		{server: "con", prefix: "con~"},
		{server: "nul.txt", prefix: "nul_txt~"},
		{server: "", prefix: "~"},
		{server: "é", prefix: "_~"},
		{server: strings.Repeat("a", 65), prefix: strings.Repeat("a", 32) + "~"},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		name := fileName(tt.server)
		if tt.plain {
			assert.Equal(t, tt.server+".json", name)
		} else {
			assert.True(t, strings.HasPrefix(name, tt.prefix), "%q: %s", tt.server, name)
			assert.Len(t, name, len(tt.prefix)+16+len(".json"), "%q: %s", tt.server, name)
		}
		assert.NotContains(t, name, "/")
		folded := strings.ToLower(name)
		assert.NotContains(t, seen, folded, "%q and %q share a file on a case-insensitive file system", tt.server, seen[folded])
		seen[folded] = tt.server
	}
	assert.NotEqual(t, strings.ToLower(fileName("GitHub")), strings.ToLower(fileName("github")))
}
