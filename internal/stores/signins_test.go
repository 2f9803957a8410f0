package stores

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/auth"
	"github.com/mcpwrap/mcpwrap/internal/pgtest"
)

// cluster is the throwaway PostgreSQL of the package's tests (nil when
// PostgreSQL is missing: they skip).
var cluster *pgtest.Cluster

// The sign-in tests run a second mcpwrap process (a replica on another
// machine: its own state directory) by re-executing the test binary.
const (
	helperEnv = "STORES_TEST_HELPER" // sign-in
	dsnEnv    = "STORES_TEST_DSN"
	stateEnv  = "STORES_TEST_STATE"
	keyEnv    = "STORES_TEST_KEY"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		if err := helper(mode); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(pgtest.Main(m, &cluster))
}

// The sign-in the helper stores: what a browser sign-in on replica 1 keeps.
var (
	signedIn = auth.Token{ServerURL: "https://mcp.example/mcp", Name: "linear", Issuer: "https://as.example",
		ClientID: "client-0042", AccessToken: "access-SECRET-1", RefreshToken: "refresh-SECRET-1", Expiry: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
	registered = auth.Registration{Issuer: "https://as.example", ServerURL: "https://mcp.example/mcp",
		RedirectURL: "http://127.0.0.1:33418/callback", ClientID: "client-0042", ClientSecret: "client-SECRET-1"}
)

func helper(mode string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, closeStore, err := signInsOf(os.Getenv(dsnEnv), os.Getenv(stateEnv), os.Getenv(keyEnv))
	if err != nil {
		return err
	}
	defer closeStore()
	switch mode {
	case "sign-in":
		return store.SaveToken(ctx, signedIn, &registered)
	}
	return fmt.Errorf("unknown helper mode %q", mode)
}

// signInsOf opens the sign-in store of a process whose state store is the
// database dsn, its state directory stateDir, with key (may be "").
func signInsOf(dsn, stateDir, key string) (*auth.Store, func(), error) {
	var set Set
	st, err := set.Open(dsn, "--store", stateDir, nil)
	if err != nil {
		return nil, nil, err
	}
	local, err := auth.OpenStore(stateDir, func(k string) string { return map[string]string{"MCPWRAP_TOKEN_STORE": "file"}[k] }, nil)
	if err != nil {
		set.Close()
		return nil, nil, err
	}
	store, err := SignIns(st, local, key)
	if err != nil {
		set.Close()
		return nil, nil, err
	}
	return store, set.Close, nil
}

// signInElsewhere runs the helper process: replica 1 signs in.
func signInElsewhere(t *testing.T, dsn, key string) (stateDir string) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	stateDir = t.TempDir()
	cmd := exec.CommandContext(t.Context(), exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=sign-in", dsnEnv+"="+dsn, stateEnv+"="+stateDir, keyEnv+"="+key)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "helper: %s", out)
	return stateDir
}

// row reads a sign-in document as the database holds it, as anyone with
// access to the database (and without the key) would.
func row(t *testing.T, dsn, name string) []byte {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn) // the password from $PGPASSFILE
	require.NoError(t, err)
	defer conn.Close(context.WithoutCancel(t.Context()))
	var doc []byte
	err = conn.QueryRow(t.Context(), "SELECT doc FROM mcpwrap_auth WHERE name = $1", name).Scan(&doc)
	if err == pgx.ErrNoRows {
		return nil
	}
	require.NoError(t, err)
	return doc
}

func newDB(t *testing.T) string {
	t.Helper()
	pgtest.Need(t, cluster)
	dsn, err := cluster.CreateDB(t.Context())
	require.NoError(t, err)
	return dsn
}

var testKey = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x5c}, 32))

// TestRegistrationIsShared: without a key, the registration one replica
// made is found by another (one registration for all), while tokens stay
// on the machine that signed in.
func TestRegistrationIsShared(t *testing.T) {
	dsn := newDB(t)
	elsewhere := signInElsewhere(t, dsn, "")

	here, closeStore, err := signInsOf(dsn, t.TempDir(), "")
	require.NoError(t, err)
	defer closeStore()
	got, ok, err := here.Registration(t.Context(), registered.ServerURL, registered.RedirectURL)
	require.NoError(t, err)
	require.True(t, ok, "replica 2 finds replica 1's registration")
	assert.Equal(t, registered, got)
	_, err = here.Token(t.Context(), signedIn.ServerURL)
	assert.ErrorIs(t, err, auth.ErrNoToken, "without a key, tokens stay where the sign-in was made")
	assert.Nil(t, row(t, dsn, "signins"), "no token in the database")
	assert.NotContains(t, string(row(t, dsn, "registrations")), "access-SECRET")

	there, closeThere, err := signInsOf(dsn, elsewhere, "")
	require.NoError(t, err)
	defer closeThere()
	tok, err := there.Token(t.Context(), signedIn.ServerURL)
	require.NoError(t, err)
	assert.Equal(t, signedIn.AccessToken, tok.AccessToken, "replica 1 keeps its token locally")
}

// TestSealedTokensAreShared: with $MCPWRAP_STORE_KEY, replica 2 uses the
// token replica 1 signed in for; the table holds it sealed (none of the
// secrets, nor the server's URL, can be read there), and no token is left
// in either state directory.
func TestSealedTokensAreShared(t *testing.T) {
	dsn := newDB(t)
	elsewhere := signInElsewhere(t, dsn, testKey)

	hereDir := t.TempDir()
	here, closeStore, err := signInsOf(dsn, hereDir, testKey)
	require.NoError(t, err)
	defer closeStore()
	tok, err := here.Token(t.Context(), signedIn.ServerURL)
	require.NoError(t, err)
	assert.Equal(t, signedIn, tok, "the token round-trips through the database")
	reg, ok, err := here.Registration(t.Context(), registered.ServerURL, registered.RedirectURL)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, registered, reg)

	raw := row(t, dsn, "signins")
	require.NotEmpty(t, raw)
	for _, secret := range []string{"access-SECRET-1", "refresh-SECRET-1", "client-SECRET-1", "client-0042", "mcp.example", "token"} {
		assert.NotContains(t, string(raw), secret, "the table holds the sign-ins sealed")
	}
	assert.Nil(t, row(t, dsn, "registrations"), "with a key, registrations are sealed too")
	for _, dir := range []string{elsewhere, hereDir} {
		data, err := os.ReadFile(filepath.Join(dir, "auth", "tokens.json"))
		if err == nil {
			assert.NotContains(t, string(data), "access-SECRET-1", "no token on the machine")
		}
	}
}

// TestWrongKeyFailsClosed: a replica given another key reads no sign-in
// and writes none over the sealed ones, with an error that names the keys
// by id and quotes neither a key nor a secret.
func TestWrongKeyFailsClosed(t *testing.T) {
	dsn := newDB(t)
	signInElsewhere(t, dsn, testKey)
	before := row(t, dsn, "signins")

	otherKey := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x11}, 32))
	here, closeStore, err := signInsOf(dsn, t.TempDir(), otherKey)
	require.NoError(t, err)
	defer closeStore()
	_, err = here.Token(t.Context(), signedIn.ServerURL)
	require.ErrorIs(t, err, auth.ErrWrongKey)
	k, _ := auth.ParseKey(testKey)
	assert.Contains(t, err.Error(), "they were sealed with key "+k.ID())
	err = here.SaveToken(t.Context(), auth.Token{ServerURL: "https://other/mcp", AccessToken: "access-SECRET-2"}, nil)
	require.ErrorIs(t, err, auth.ErrWrongKey)
	assert.Equal(t, before, row(t, dsn, "signins"), "nothing written over them")
	for _, secret := range []string{testKey, otherKey, "access-SECRET", "refresh-SECRET"} {
		assert.NotContains(t, err.Error(), secret)
	}

	_, _, err = signInsOf(dsn, t.TempDir(), "not a key!")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "$MCPWRAP_STORE_KEY is not base64")
	assert.NotContains(t, err.Error(), "not a key!")
}
