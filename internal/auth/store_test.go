package auth

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zalando/go-keyring"
)

// These tests replace the OS keychain with go-keyring's in-memory mock, so
// they do not run in parallel.

func TestOpenStoreUsesTheKeychain(t *testing.T) {
	keyring.MockInit()
	dir := t.TempDir()
	s, err := OpenStore(dir, func(string) string { return "" }, nil)
	require.NoError(t, err)
	assert.Equal(t, "the OS keychain", s.Where())
	require.NoError(t, s.SaveToken(t.Context(), Token{ServerURL: "https://a/mcp", AccessToken: "secret-access"}, nil))
	tok, err := s.Token(t.Context(), "https://a/mcp")
	require.NoError(t, err)
	assert.Equal(t, "secret-access", tok.AccessToken)
	_, err = os.Stat(filepath.Join(dir, storeDirName, "tokens.json"))
	assert.True(t, errors.Is(err, os.ErrNotExist), "no token file beside the keychain")
	assert.NotEmpty(t, s.Generation(t.Context()), "other processes learn of the change")
}

func TestOpenStoreFallsBackToAFile(t *testing.T) {
	keyring.MockInitWithError(errors.New("no D-Bus Secret Service"))
	defer keyring.MockInit()
	dir := t.TempDir()
	s, err := OpenStore(dir, func(string) string { return "" }, nil)
	require.NoError(t, err)
	assert.Contains(t, s.Where(), "file ")
	require.NoError(t, s.SaveToken(t.Context(), Token{ServerURL: "https://a/mcp", AccessToken: "secret-access"}, nil))
	info, err := os.Stat(filepath.Join(dir, storeDirName, "tokens.json"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}

func TestOpenStoreForcedFile(t *testing.T) {
	keyring.MockInit()
	s, err := OpenStore(t.TempDir(), func(k string) string { return map[string]string{"MCPWRAP_TOKEN_STORE": "file"}[k] }, nil)
	require.NoError(t, err)
	assert.Contains(t, s.Where(), "file ")
}

func TestForgetKeepsTheRegistration(t *testing.T) {
	s, err := newFileStore(t.TempDir())
	require.NoError(t, err)
	reg := &Registration{Issuer: "https://as", ServerURL: "https://a/mcp", RedirectURL: "http://127.0.0.1:1/callback", ClientID: "c"}
	require.NoError(t, s.SaveToken(t.Context(), Token{ServerURL: "https://a/mcp", AccessToken: "x"}, reg))
	found, err := s.Forget(t.Context(), "https://a/mcp")
	require.NoError(t, err)
	assert.True(t, found)
	_, err = s.Token(t.Context(), "https://a/mcp")
	assert.ErrorIs(t, err, ErrNoToken)
	got, ok, err := s.Registration(t.Context(), "https://a/mcp", "http://127.0.0.1:1/callback")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, *reg, got)
}

// FuzzStoreDocument: whatever the token file holds, reading it never
// panics, and an error never echoes its content (it may hold secrets).
func FuzzStoreDocument(f *testing.F) {
	f.Add([]byte(`{"version":1,"tokens":[{"server_url":"https://a/mcp","access_token":"secret-1"}]}`))
	f.Add([]byte(`{"tokens":[{"access_token":"secret-2"`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		s, err := newFileStore(dir)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "tokens.json"), data, 0o600))
		_, err = s.Token(t.Context(), "https://a/mcp")
		if err != nil && !errors.Is(err, ErrNoToken) && len(data) >= 8 {
			assert.NotContains(t, err.Error(), string(data))
		}
		_, _ = s.SignIns(t.Context())
	})
}

// TestSignInKeepsOtherServersTokens: two endpoints on one host whose
// protected-resource metadata names the same issuer and resource (the
// root metadata, resource "https://h") are two servers with a slot each:
// signing in to one, again, or out of it never takes the other's token.
func TestSignInKeepsOtherServersTokens(t *testing.T) {
	s, err := newFileStore(t.TempDir())
	require.NoError(t, err)
	a := Token{ServerURL: "https://h/a/mcp", Issuer: "https://as", Resource: "https://h", AccessToken: "a-1"}
	b := Token{ServerURL: "https://h/b/mcp", Issuer: "https://as", Resource: "https://h", AccessToken: "b-1"}
	require.NoError(t, s.SaveToken(t.Context(), a, nil))
	require.NoError(t, s.SaveToken(t.Context(), b, nil))
	assert.Equal(t, "a-1", mustToken(t, s, a.ServerURL).AccessToken, "b's sign-in kept a's token")

	a.AccessToken = "a-2"
	require.NoError(t, s.SaveToken(t.Context(), a, nil))
	assert.Equal(t, "a-2", mustToken(t, s, a.ServerURL).AccessToken, "a's new sign-in replaces its own")
	assert.Equal(t, "b-1", mustToken(t, s, b.ServerURL).AccessToken, "a's new sign-in kept b's token")
	list, err := s.SignIns(t.Context())
	require.NoError(t, err)
	assert.Len(t, list, 2, "one slot per server")

	_, err = s.Forget(t.Context(), a.ServerURL)
	require.NoError(t, err)
	assert.Equal(t, "b-1", mustToken(t, s, b.ServerURL).AccessToken, "signing out of a kept b's token")
}
