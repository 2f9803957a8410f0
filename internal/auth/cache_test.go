package auth

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingBackend counts the reads of the document it keeps in a file.
type countingBackend struct {
	fileBackend
	reads atomic.Int32
}

func (b *countingBackend) read() ([]byte, error) {
	b.reads.Add(1)
	return b.fileBackend.read()
}

func TestTransportReadsTheStoreOnce(t *testing.T) {
	tests := []struct {
		name  string
		token string // stored before the first request; "" for none
	}{
		{name: "not signed in"},
		{name: "signed in", token: "at-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gotAuth []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotAuth = append(gotAuth, r.Header.Get("Authorization"))
			}))
			defer srv.Close()
			dir := t.TempDir()
			backend := &countingBackend{fileBackend: fileBackend{path: filepath.Join(dir, "tokens.json")}}
			store := NewStore(&localStore{dir: dir, b: backend}, nil)
			if tt.token != "" {
				require.NoError(t, store.SaveToken(t.Context(), Token{ServerURL: srv.URL, AccessToken: tt.token}, nil))
			}
			before := backend.reads.Load()
			rt := (&Client{Name: "linear", ServerURL: srv.URL, Store: store}).WrapTransport(nil)
			for range 3 {
				req, err := http.NewRequest(http.MethodPost, srv.URL, nil)
				require.NoError(t, err)
				resp, err := rt.RoundTrip(req)
				require.NoError(t, err)
				resp.Body.Close()
			}
			// Every later change reaches the Client through Watch, which
			// reloads it when the store's generation moves.
			assert.Equal(t, int32(1), backend.reads.Load()-before, "store reads for 3 requests")
			want := ""
			if tt.token != "" {
				want = "Bearer " + tt.token
			}
			assert.Equal(t, []string{want, want, want}, gotAuth)
		})
	}
}

func TestTransportFindsATokenStoredSinceItsAbsenceWasCached(t *testing.T) {
	var gotAuth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.NotFound(w, r) // no OAuth metadata
			return
		}
		gotAuth = append(gotAuth, r.Header.Get("Authorization"))
		if r.Header.Get("Authorization") != "Bearer at-2" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="x"`)
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	store, err := newFileStore(dir)
	require.NoError(t, err)
	rt := (&Client{Name: "linear", ServerURL: srv.URL, Store: store}).WrapTransport(nil)
	send := func() (*http.Response, error) {
		req, err := http.NewRequest(http.MethodPost, srv.URL, nil)
		require.NoError(t, err)
		return rt.RoundTrip(req)
	}
	// Not signed in: the absence is cached (and the sign-in the server
	// asks for is not offered: no OAuth metadata).
	resp, err := send()
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	// Another process signs in, before Watch has seen it.
	other, err := newFileStore(dir)
	require.NoError(t, err)
	require.NoError(t, other.SaveToken(t.Context(), Token{ServerURL: srv.URL, AccessToken: "at-2"}, nil))

	resp, err = send()
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the refused request is sent again with the token stored since")
	require.NotEmpty(t, gotAuth)
	assert.Equal(t, "Bearer at-2", gotAuth[len(gotAuth)-1])
}
