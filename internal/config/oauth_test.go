package config

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOAuthBlock(t *testing.T) {
	t.Parallel()
	f, err := Parse("config.json", []byte(`{
  "defaults": {"oauth": {"client_id": "shared", "scopes": "read write", "redirect_port": 49999}},
  "servers": {
    "linear": {"oauth": {"client_secret_env": "LINEAR_SECRET", "client_metadata_url": "https://example.com/mcpwrap.json", "redirect_port": 0}},
    "docs": {}
  }
}`))
	require.NoError(t, err)
	assert.Equal(t, OAuth{ClientID: "shared", ClientSecretEnv: "LINEAR_SECRET", ClientMetadataURL: "https://example.com/mcpwrap.json",
		Scopes: []string{"read", "write"}, RedirectPort: 0}, f.Server("linear").OAuth, "the server's entry wins, even with zero")
	assert.Equal(t, OAuth{ClientID: "shared", Scopes: []string{"read", "write"}, RedirectPort: 49999}, f.Server("docs").OAuth)

	s := f.Server("docs")
	s.OAuth.Scopes[0] = "changed"
	assert.Equal(t, "read", f.Server("docs").OAuth.Scopes[0], "a Server shares no slice with its File")
}

func TestOAuthBlockErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, config, want string
	}{
		{name: "unknown key", config: `{"defaults":{"oauth":{"client":"x"}}}`, want: "defaults.oauth.client"},
		{name: "port too large", config: `{"servers":{"a":{"oauth":{"redirect_port":70000}}}}`, want: "at most 65535"},
		{name: "negative port", config: `{"servers":{"a":{"oauth":{"redirect_port":-1}}}}`, want: "redirect_port"},
		{name: "metadata URL not https", config: `{"servers":{"a":{"oauth":{"client_metadata_url":"http://example.com/x.json"}}}}`, want: "https URL with a path"},
		{name: "metadata URL without path", config: `{"servers":{"a":{"oauth":{"client_metadata_url":"https://example.com"}}}}`, want: "https URL with a path"},
		{name: "scopes not a string", config: `{"servers":{"a":{"oauth":{"scopes":["a"]}}}}`, want: "scopes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("config.json", []byte(tt.config))
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrInvalid))
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
