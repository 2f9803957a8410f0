package auth

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcpwrap/mcpwrap/internal/syncbuf"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// TestSecondProcessWaitsForTheSignIn: a sidecar whose server wants a
// sign-in while another process runs one does not open another tab.
func TestSecondProcessWaitsForTheSignIn(t *testing.T) {
	dir := t.TempDir()
	// The authorization server never answers: the first sign-in stays
	// under way for the whole test.
	stop := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-stop }))
	defer hang.Close()
	defer close(stop)
	serverURL := hang.URL + "/mcp"
	browser := &Browser{Getenv: func(k string) string {
		if k == "MCPWRAP_BROWSER" {
			return "true"
		}
		return ""
	}}
	newClient := func(port int) *Client {
		store, err := newFileStore(dir)
		require.NoError(t, err)
		c := &Client{Name: "linear", ServerURL: serverURL, Store: store, AutoLogin: true,
			Browser: browser, Config: Config{RedirectPort: port}}
		c.setup()
		return c
	}
	ch := challenge{url: serverURL, status: http.StatusUnauthorized, header: http.Header{}}
	first := newClient(freePort(t))
	defer first.Close()
	done, err := first.loginRequired(ch)
	require.NotNil(t, done, "the first process starts a sign-in")
	assert.Contains(t, resilience.Classify(err).Hint, "A browser window has been opened")

	second := newClient(freePort(t))
	defer second.Close()
	done, err = second.loginRequired(ch)
	assert.Nil(t, done, "the second process starts none")
	assert.Equal(t, "A sign-in is under way in another window; finish it in the browser, or run `mcpwrap login linear`", resilience.Classify(err).Hint)
}

// TestWatchHearsAnotherProcessSignIn: a token stored through another
// instance of the keychain/file store on the same directory (mcpwrap login
// in another process) reaches a running Client's Watch through the store's
// file notification, with every poll hours away; cancelling the watch ends
// it and every goroutine it started.
func TestWatchHearsAnotherProcessSignIn(t *testing.T) {
	dir := t.TempDir()
	watcherStore, err := newFileStore(dir)
	require.NoError(t, err)
	watcherStore.tokens.(*localStore).watch.PollInterval = time.Hour // were notifications to fail
	c := &Client{Name: "linear", ServerURL: "https://mcp.example/mcp", Store: watcherStore}
	before := goleak.IgnoreCurrent()
	cancel, stopped := watchSignInElsewhere(t, c, dir)

	cancel()
	select {
	case <-stopped:
	case <-time.After(20 * time.Second):
		require.FailNow(t, "Watch did not return once its context was done")
	}
	goleak.VerifyNone(t, before)
}

// watchSignInElsewhere runs c.Watch (its own poll an hour apart), signs
// in through another store on dir, as another process would, and requires
// the watch to call back and c to send the new token. It returns the
// watch's cancel and a channel closed once Watch has returned; cleanup
// cancels and waits for it too.
func watchSignInElsewhere(t *testing.T, c *Client, dir string) (cancel func(), stopped <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	called := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Watch(ctx, time.Hour, func() {
			select {
			case called <- struct{}{}:
			default:
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	other, err := newFileStore(dir)
	require.NoError(t, err)
	require.NoError(t, other.SaveToken(ctx, Token{ServerURL: "https://mcp.example/mcp", AccessToken: "tok"}, nil))
	select {
	case <-called:
	case <-time.After(20 * time.Second):
		require.FailNow(t, "the sign-in of another process did not reach the watch")
	}
	tok, err := c.accessToken(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "tok", tok)
	return cancel, done
}

// TestWatchSaysWhyItPollsTheFileStore: with no file notification watcher
// left (a user's inotify instances exhausted), the store's watch says why
// in the log and polls the generation file, which brings another
// process's sign-in.
func TestWatchSaysWhyItPollsTheFileStore(t *testing.T) {
	dir := t.TempDir()
	watcherStore, err := newFileStore(dir)
	require.NoError(t, err)
	var logs syncbuf.Buffer
	local := watcherStore.tokens.(*localStore)
	local.logger = slog.New(slog.NewTextHandler(&logs, nil))
	local.watch.NewWatcher = func() (*fsnotify.Watcher, error) { return nil, errors.New("too many open files") }
	local.watch.PollInterval = 5 * time.Millisecond
	c := &Client{Name: "linear", ServerURL: "https://mcp.example/mcp", Store: watcherStore}
	watchSignInElsewhere(t, c, dir)
	assert.Contains(t, logs.String(), "file notifications unavailable; polling the sign-in store's generation file")
	assert.Contains(t, logs.String(), "too many open files")
}

// TestStoreKeepsSecretsOutOfErrors: a corrupt store is reported without
// its content.
func TestStoreKeepsSecretsOutOfErrors(t *testing.T) {
	dir := t.TempDir()
	s, err := newFileStore(dir)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokens.json"), []byte(`{"tokens":[{"access_token":"secret-xyz"`), 0o600))
	_, err = s.Token(t.Context(), "https://a/mcp")
	require.Error(t, err)
	assert.False(t, strings.Contains(err.Error(), "secret-xyz"))
}

// TestConcurrentDemandsStartOneSignIn: requests refused at the same moment
// start one background sign-in between them.
func TestConcurrentDemandsStartOneSignIn(t *testing.T) {
	stop := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-stop }))
	defer hang.Close()
	defer close(stop)
	store, err := newFileStore(t.TempDir())
	require.NoError(t, err)
	c := &Client{Name: "linear", ServerURL: hang.URL + "/mcp", Store: store, AutoLogin: true,
		Browser: &Browser{Getenv: func(k string) string { return map[string]string{"MCPWRAP_BROWSER": "true"}[k] }},
		Config:  Config{RedirectPort: freePort(t)}}
	c.setup()
	defer c.Close()
	ch := challenge{url: hang.URL + "/mcp", status: http.StatusUnauthorized, header: http.Header{}}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			done, err := c.loginRequired(ch)
			assert.NotNil(t, done, "each waits for the sign-in under way")
			assert.Contains(t, resilience.Classify(err).Hint, "A browser window has been opened")
		})
	}
	wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	assert.Equal(t, 1, c.autoLogins, "background sign-ins started")
}

// TestWatchIgnoresOtherServers: a sign-in to another server does not
// reload this one.
func TestWatchIgnoresOtherServers(t *testing.T) {
	dir := t.TempDir()
	watcherStore, err := newFileStore(dir)
	require.NoError(t, err)
	c := &Client{Name: "linear", ServerURL: "https://mcp.example/mcp", Store: watcherStore}
	ctx, cancel := context.WithCancel(t.Context())
	calls := make(chan struct{}, 4)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		c.Watch(ctx, 0, func() { calls <- struct{}{} })
	}()
	other, err := newFileStore(dir)
	require.NoError(t, err)
	require.NoError(t, other.SaveToken(ctx, Token{ServerURL: "https://other.example/mcp", AccessToken: "x"}, nil))
	require.NoError(t, other.SaveToken(ctx, Token{ServerURL: "https://mcp.example/mcp", AccessToken: "mine"}, nil))
	<-calls // for this server's token
	cancel()
	<-stopped
	assert.Empty(t, calls, "no call for the other server's sign-in")
}

// notifyingStore is a memTokenStore that announces changes, as the
// PostgreSQL document does: each send on changes calls the watchers back,
// and a failing Load stands for a database that went away. Generation
// counts its calls: a watched Notifier is never polled.
type notifyingStore struct {
	memTokenStore
	changes     chan struct{}
	down        atomic.Bool
	generations atomic.Int32
}

func (n *notifyingStore) Load(ctx context.Context) ([]byte, error) {
	if n.down.Load() {
		return nil, errors.New("state store unavailable: the test's database is down")
	}
	return n.memTokenStore.Load(ctx)
}

func (n *notifyingStore) Generation(ctx context.Context) (string, error) {
	n.generations.Add(1)
	return n.memTokenStore.Generation(ctx)
}

func (n *notifyingStore) Watch(ctx context.Context, onChange func()) {
	onChange()
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.changes:
			onChange()
		}
	}
}

// TestWatchFollowsANotifier: a store that announces its changes (here
// behind Seal, as the PostgreSQL one is) is followed, never polled, even
// at a poll interval of 1 ns; an announcement brings another process's
// sign-in; a read that fails keeps the token in memory and logs why,
// without a secret.
func TestWatchFollowsANotifier(t *testing.T) {
	shared := &notifyingStore{changes: make(chan struct{})}
	key := mustKey(t, keyA)
	var logs syncbuf.Buffer
	c := &Client{Name: "linear", ServerURL: "https://mcp.example/mcp", Store: NewStore(Seal(shared, key, "signins"), nil),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	called := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		c.Watch(ctx, 1, func() {
			select {
			case called <- struct{}{}:
			case <-ctx.Done():
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-stopped })
	// within fails the test when the watch does not do its part in time.
	within := func(ch chan struct{}, send bool, what string) {
		t.Helper()
		timeout := time.After(20 * time.Second)
		if send {
			select {
			case ch <- struct{}{}:
			case <-timeout:
				t.Fatal(what)
			}
			return
		}
		select {
		case <-ch:
		case <-timeout:
			t.Fatal(what)
		}
	}
	other := NewStore(Seal(shared, key, "signins"), nil)
	require.NoError(t, other.SaveToken(t.Context(), Token{ServerURL: "https://mcp.example/mcp", AccessToken: "tok-SECRET-1"}, nil))
	within(shared.changes, true, "the watch does not follow the store")
	within(called, false, "the announced sign-in is not seen")
	tok, err := c.accessToken(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "tok-SECRET-1", tok)

	shared.down.Store(true)
	within(shared.changes, true, "the watch does not follow the store") // the connection is lost
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "cannot read the sign-in; keeping the one in memory")
	}, 20*time.Second, time.Millisecond, "the failed read is logged")
	tok, err = c.accessToken(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "tok-SECRET-1", tok, "a store that cannot be read takes no sign-in away")
	assert.Contains(t, logs.String(), "the test's database is down")
	assert.NotContains(t, logs.String(), "SECRET")

	shared.down.Store(false)
	require.NoError(t, other.SaveToken(t.Context(), Token{ServerURL: "https://mcp.example/mcp", AccessToken: "tok-SECRET-2"}, nil))
	within(shared.changes, true, "the watch does not follow the store") // back: read again
	within(called, false, "the sign-in made during the outage is not seen")
	tok, err = c.accessToken(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "tok-SECRET-2", tok)
	assert.Zero(t, shared.generations.Load(), "a Notifier is never polled")
}
