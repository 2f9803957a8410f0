package auth

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/resilience"
)

// memTokenStore is a TokenStore in memory, as a shared database row would
// be: every Store over it sees the others' writes.
type memTokenStore struct {
	mu  sync.Mutex
	doc []byte
	gen int
}

func (m *memTokenStore) Load(context.Context) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return bytes.Clone(m.doc), nil
}

func (m *memTokenStore) Update(_ context.Context, fn func([]byte) ([]byte, error)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	next, err := fn(bytes.Clone(m.doc))
	if err != nil {
		return err
	}
	m.doc, m.gen = next, m.gen+1
	return nil
}

func (m *memTokenStore) Lock(context.Context, string) (func(), error) { return func() {}, nil }

func (m *memTokenStore) TryLock(context.Context, string) (func(), bool, error) {
	return func() {}, true, nil
}

func (m *memTokenStore) Generation(context.Context) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return fmt.Sprint(m.gen), nil
}

func (m *memTokenStore) String() string { return "the test's store" }

func (m *memTokenStore) raw() []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return bytes.Clone(m.doc)
}

// Two keys, as `openssl rand -base64 32` prints them.
var (
	keyA = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xa1}, 32))
	keyB = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xb2}, 32))
)

func mustKey(t testing.TB, s string) *Key {
	t.Helper()
	k, err := ParseKey(s)
	require.NoError(t, err)
	return k
}

func TestParseKey(t *testing.T) {
	raw := bytes.Repeat([]byte{7}, 32)
	tests := []struct {
		name    string
		in      string
		wantErr string
	}{
		{name: "standard, padded", in: base64.StdEncoding.EncodeToString(raw)},
		{name: "standard, unpadded, with a newline", in: base64.RawStdEncoding.EncodeToString(raw) + "\n"},
		{name: "URL alphabet", in: base64.URLEncoding.EncodeToString(raw)},
		{name: "not base64", in: "correct horse battery staple!", wantErr: "$MCPWRAP_STORE_KEY is not base64"},
		{name: "16 bytes", in: base64.StdEncoding.EncodeToString(raw[:16]), wantErr: "decodes to 16 bytes, not 32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := ParseKey(tt.in)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.NotContains(t, err.Error(), strings.TrimSpace(tt.in), "the key is never quoted")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, mustKey(t, base64.StdEncoding.EncodeToString(raw)).ID(), k.ID(), "one key, one id, however it is spelt")
		})
	}
}

// TestKeyNeverPrints: a Key in a log record or a format verb shows its id.
func TestKeyNeverPrints(t *testing.T) {
	k := mustKey(t, keyA)
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("x", "key", k)
	for _, out := range []string{logs.String(), fmt.Sprint(k), fmt.Sprintf("%v %+v %s", k, k, k)} {
		assert.NotContains(t, out, keyA)
		assert.Contains(t, out, k.ID())
	}
}

// TestSealedStoreRoundTrip: tokens written through a sealed store read
// back through another Store with the same key, and the shared document
// holds none of them in the clear.
func TestSealedStoreRoundTrip(t *testing.T) {
	shared := &memTokenStore{}
	writer := NewStore(Seal(shared, mustKey(t, keyA), "signins"), nil)
	reg := &Registration{Issuer: "https://as", ServerURL: "https://a/mcp", RedirectURL: "http://127.0.0.1:1/callback", ClientID: "client-77", ClientSecret: "client-secret-77"}
	require.NoError(t, writer.SaveToken(t.Context(), Token{ServerURL: "https://a/mcp", AccessToken: "access-77", RefreshToken: "refresh-77"}, reg))

	reader := NewStore(Seal(shared, mustKey(t, keyA), "signins"), nil)
	tok, err := reader.Token(t.Context(), "https://a/mcp")
	require.NoError(t, err)
	assert.Equal(t, "access-77", tok.AccessToken)
	got, ok, err := reader.Registration(t.Context(), "https://a/mcp", "http://127.0.0.1:1/callback")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, *reg, got)

	raw := shared.raw()
	for _, secret := range []string{"access-77", "refresh-77", "client-77", "https://a/mcp", "server_url"} {
		assert.NotContains(t, string(raw), secret)
	}
	assert.True(t, bytes.HasPrefix(raw, []byte(sealMagic)))
	assert.Contains(t, reader.Where(), "sealed with key "+mustKey(t, keyA).ID())
}

// TestSealedStoreFailsClosed: a document sealed with another key, altered,
// moved to another label, or not sealed is refused by reads and writes,
// with a KeyError that names key ids and quotes nothing; nothing is
// written over it.
func TestSealedStoreFailsClosed(t *testing.T) {
	sealedWithA := func(t *testing.T) []byte {
		m := &memTokenStore{}
		require.NoError(t, NewStore(Seal(m, mustKey(t, keyA), "signins"), nil).SaveToken(t.Context(), Token{ServerURL: "https://a/mcp", AccessToken: "access-77"}, nil))
		return m.raw()
	}
	tests := []struct {
		name       string
		doc        func(t *testing.T) []byte
		key, label string
		wantReason string
	}{
		{name: "another key", doc: sealedWithA, key: keyB, label: "signins", wantReason: "they were sealed with key " + mustKey(t, keyA).ID()},
		{name: "altered", key: keyA, label: "signins", wantReason: "they were altered", doc: func(t *testing.T) []byte {
			b := sealedWithA(t)
			b[len(b)-1] ^= 1
			return b
		}},
		{name: "another label", doc: sealedWithA, key: keyA, label: "registrations", wantReason: "they were altered"},
		{name: "cut short", key: keyA, label: "signins", wantReason: "they are cut short", doc: func(t *testing.T) []byte { return sealedWithA(t)[:len(sealMagic)+10] }},
		{name: "not sealed", key: keyA, label: "signins", wantReason: "they are not sealed", doc: func(*testing.T) []byte {
			return []byte(`{"version":1,"tokens":[{"server_url":"https://a/mcp","access_token":"planted"}]}`)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shared := &memTokenStore{doc: tt.doc(t)}
			before := shared.raw()
			s := NewStore(Seal(shared, mustKey(t, tt.key), tt.label), nil)

			_, err := s.Token(t.Context(), "https://a/mcp")
			require.ErrorIs(t, err, ErrWrongKey)
			var keyErr *KeyError
			require.ErrorAs(t, err, &keyErr)
			assert.Equal(t, tt.wantReason, keyErr.Reason)
			assert.Contains(t, err.Error(), "key "+mustKey(t, tt.key).ID())
			for _, secret := range []string{"access-77", "planted", keyA, keyB} {
				assert.NotContains(t, err.Error(), secret)
			}

			err = s.SaveToken(t.Context(), Token{ServerURL: "https://b/mcp", AccessToken: "access-88"}, nil)
			require.ErrorIs(t, err, ErrWrongKey)
			_, err = s.Forget(t.Context(), "https://a/mcp")
			require.ErrorIs(t, err, ErrWrongKey)
			assert.Equal(t, before, shared.raw(), "nothing written over a document that does not open")
		})
	}
}

// TestWrongKeyNeedsSignIn: a sidecar whose key does not open the shared
// sign-ins sends nothing to the server and reports the load denied with
// login_required, saying why and how to fix it; its log holds no secret.
func TestWrongKeyNeedsSignIn(t *testing.T) {
	shared := &memTokenStore{}
	require.NoError(t, NewStore(Seal(shared, mustKey(t, keyA), "signins"), nil).SaveToken(t.Context(),
		Token{ServerURL: "https://a/mcp", AccessToken: "access-77", RefreshToken: "refresh-77"}, nil))

	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { requests.Add(1) }))
	defer srv.Close()
	var logs bytes.Buffer
	c := &Client{Name: "linear", ServerURL: "https://a/mcp", Store: NewStore(Seal(shared, mustKey(t, keyB), "signins"), nil),
		AutoLogin: true, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	defer c.Close()

	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, strings.NewReader("{}"))
	require.NoError(t, err)
	_, err = c.WrapTransport(nil).RoundTrip(req)

	var re *resilience.Error
	require.True(t, errors.As(err, &re), "%v", err)
	assert.Equal(t, resilience.Denied, re.Class)
	assert.Equal(t, resilience.CodeLoginRequired, re.Code)
	assert.Contains(t, re.Reason, "sign-in required: the stored sign-ins cannot be opened with $MCPWRAP_STORE_KEY")
	assert.Contains(t, re.Hint, "the same MCPWRAP_STORE_KEY")
	assert.ErrorIs(t, err, ErrWrongKey)
	assert.Zero(t, requests.Load(), "nothing is sent without the sign-in")
	for _, secret := range []string{"access-77", "refresh-77", keyA, keyB} {
		assert.NotContains(t, logs.String(), secret)
		assert.NotContains(t, err.Error(), secret)
	}
}

// FuzzOpenSealed: whatever a shared store holds, opening it never panics,
// never succeeds unless the bytes are a sealing under the key and label
// (then it gives back what was sealed), and never quotes the bytes.
func FuzzOpenSealed(f *testing.F) {
	k, err := ParseKey(keyA)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(k.seal("signins", []byte(`{"version":1}`)))
	f.Add(k.seal("signins", nil))
	f.Add([]byte(sealMagic))
	f.Add([]byte(sealMagic + "abcd"))
	f.Add([]byte(`{"version":1,"tokens":[]}`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		plain, _, err := k.open("signins", data)
		if err != nil {
			assert.Nil(t, plain)
			if len(data) >= 8 {
				assert.NotContains(t, err.Error(), string(data))
			}
			return
		}
		// It opened: sealing what came out under the same nonce gives the
		// same bytes back, so nothing but a sealing opens.
		nonce := data[len(sealMagic)+keyIDLen : len(sealMagic)+keyIDLen+k.aead.NonceSize()]
		header := data[:len(sealMagic)+keyIDLen]
		again := k.aead.Seal(bytes.Clone(data[:len(sealMagic)+keyIDLen+k.aead.NonceSize()]), nonce, plain, append(bytes.Clone(header), "signins"...))
		assert.Equal(t, data, again)
	})
}
