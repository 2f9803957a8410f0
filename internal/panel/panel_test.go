package panel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/config"
	"github.com/mcpwrap/mcpwrap/internal/policy"
	"github.com/mcpwrap/mcpwrap/internal/runstatus"
	"github.com/mcpwrap/mcpwrap/internal/state"
	"github.com/mcpwrap/mcpwrap/internal/toolscli"
)

// fixture is a panel served on a loopback port over a temp state store.
type fixture struct {
	p      *Panel
	store  *state.FileStore
	base   string // http://127.0.0.1:PORT
	launch string
}

func toolDef(name, description string, readOnly bool) json.RawMessage {
	def := map[string]any{"name": name, "description": description,
		"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}}
	if readOnly {
		def["annotations"] = map[string]any{"readOnlyHint": true}
	}
	raw, _ := json.Marshal(def)
	return raw
}

// record writes a catalog for server as a sidecar records it.
func record(t testing.TB, store state.Store, server string, defs ...json.RawMessage) {
	t.Helper()
	require.NoError(t, store.Update(context.Background(), server, func(s *state.Server) error {
		s.Catalog = &state.Catalog{SeenAt: time.Now(), Tools: map[string]state.CatalogTool{}}
		for _, d := range defs {
			tool, err := policy.ParseTool(d)
			require.NoError(t, err)
			s.Catalog.Tools[tool.Name] = state.CatalogTool{Definition: d, Hash: tool.Hash}
		}
		return nil
	}))
}

func approve(t testing.TB, store state.Store, server string, defs ...json.RawMessage) {
	t.Helper()
	require.NoError(t, store.Update(context.Background(), server, func(s *state.Server) error {
		for _, def := range defs {
			tool, err := policy.ParseTool(def)
			require.NoError(t, err)
			s.Approve(tool.Name, state.Approval{ApprovedAt: time.Now(), Definition: def, Hash: tool.Hash})
		}
		return nil
	}))
}

func newFixture(t testing.TB, configJSON string) *fixture {
	return newFixtureWith(t, configJSON, nil)
}

// newFixtureWith is newFixture with setup, when not nil, called on the
// Panel before it serves.
func newFixtureWith(t testing.TB, configJSON string, setup func(p *Panel)) *fixture {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.json")
	require.NoError(t, os.WriteFile(cfgPath, []byte(configJSON), 0o600))
	store := state.Open(filepath.Join(dir, "state"), nil)
	cache := &toolscli.DefinitionCache{}
	p := &Panel{
		Tools: func(context.Context) (*toolscli.Tools, error) {
			file, err := config.Load(cfgPath)
			if err != nil {
				return nil, err
			}
			return toolscli.NewTools(file, store, nil).WithCache(cache), nil
		},
		Store:    store,
		Interval: 50 * time.Millisecond,
		Logger:   slog.New(slog.NewTextHandler(tlog{t}, nil)),
	}
	if setup != nil {
		setup(p)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	launch := p.LaunchURL(ln.Addr())
	served := make(chan error, 1)
	go func() { served <- p.Serve(ln) }()
	if tt, ok := t.(*testing.T); ok {
		tt.Cleanup(func() {
			require.NoError(tt, p.Shutdown(context.Background()))
			assert.ErrorIs(tt, <-served, ErrServerClosed)
		})
	}
	return &fixture{p: p, store: store, base: "http://" + ln.Addr().String(), launch: launch}
}

// tlog writes the panel's log to the test's.
type tlog struct{ t testing.TB }

func (w tlog) Write(b []byte) (int, error) { w.t.Log(strings.TrimSpace(string(b))); return len(b), nil }

// browser is an HTTP client with a cookie jar that does not follow
// redirects, so each answer can be checked.
func browser(t testing.TB) *http.Client {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// signedIn returns a browser that opened the launch URL.
func (f *fixture) signedIn(t *testing.T) *http.Client {
	c := browser(t)
	resp, err := c.Get(f.launch)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	return c
}

func do(t *testing.T, c *http.Client, method, target string, form url.Values, header map[string]string) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, target, body)
	require.NoError(t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestLaunchKeyBecomesACookie(t *testing.T) {
	f := newFixture(t, `{}`)
	c := browser(t)
	resp, _ := do(t, c, http.MethodGet, f.launch, nil, nil)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "/", resp.Header.Get("Location"), "the key leaves the address bar")
	cookies := resp.Cookies()
	require.Len(t, cookies, 1)
	assert.True(t, cookies[0].HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, cookies[0].SameSite)
	assert.NotContains(t, f.launch, cookies[0].Value, "the cookie is not the key")

	resp, body := do(t, c, http.MethodGet, f.base+"/", nil, nil)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, "<h1>Servers</h1>")
	assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'self'")
	assert.NotContains(t, body, "<script>", "no inline script")
	assert.NotContains(t, body, "http://"+"cdn", "no remote asset")
}

// TestRefusals: what a page of another site, another local program or a
// rebinding DNS name could send is refused, and changes nothing.
func TestRefusals(t *testing.T) {
	f := newFixture(t, `{"servers": {"fs": {}}}`)
	record(t, f.store, "fs", toolDef("write_file", "Writes.", false))
	user := f.signedIn(t)
	csrf := f.p.secrets.csrf
	port := strings.TrimPrefix(f.base, "http://127.0.0.1:")
	disable := url.Values{"server": {"fs"}, "tool": {"write_file"}, "csrf": {csrf}}
	noToken := url.Values{"server": {"fs"}, "tool": {"write_file"}}

	tests := []struct {
		name   string
		client *http.Client
		method string
		target string
		form   url.Values
		header map[string]string
		status int
	}{
		{name: "no cookie, no key", client: browser(t), method: http.MethodGet, target: f.base + "/", status: http.StatusUnauthorized},
		{name: "wrong key", client: browser(t), method: http.MethodGet, target: f.base + "/open?key=guess", status: http.StatusUnauthorized},
		{name: "no cookie on a change", client: browser(t), method: http.MethodPost, target: f.base + "/disable", form: disable, status: http.StatusUnauthorized},
		{name: "no cookie on the event stream", client: browser(t), method: http.MethodGet, target: f.base + "/events", status: http.StatusUnauthorized},
		{name: "foreign Host", client: user, method: http.MethodGet, target: f.base + "/", header: map[string]string{"Host": "evil.example:" + port}, status: http.StatusForbidden},
		{name: "foreign Host with the key", client: browser(t), method: http.MethodGet, target: f.launch, header: map[string]string{"Host": "evil.example:" + port}, status: http.StatusForbidden},
		{name: "cross-origin POST", client: user, method: http.MethodPost, target: f.base + "/disable", form: disable, header: map[string]string{"Origin": "https://evil.example"}, status: http.StatusForbidden},
		{name: "POST from another local port", client: user, method: http.MethodPost, target: f.base + "/disable", form: disable, header: map[string]string{"Origin": "http://127.0.0.1:1"}, status: http.StatusForbidden},
		{name: "cross-site fetch metadata", client: user, method: http.MethodPost, target: f.base + "/disable", form: disable, header: map[string]string{"Sec-Fetch-Site": "same-site"}, status: http.StatusForbidden},
		{name: "POST without CSRF token", client: user, method: http.MethodPost, target: f.base + "/disable", form: noToken, status: http.StatusForbidden},
		{name: "GET cannot change", client: user, method: http.MethodGet, target: f.base + "/disable?server=fs&tool=write_file&csrf=" + csrf, status: http.StatusNotFound},
		{name: "PUT", client: user, method: http.MethodPut, target: f.base + "/disable", form: disable, status: http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, _ := do(t, tt.client, tt.method, tt.target, tt.form, tt.header)
			assert.Equal(t, tt.status, resp.StatusCode)
			assert.Empty(t, resp.Cookies(), "no session handed out")
			srv, err := f.store.Load(context.Background(), "fs")
			require.NoError(t, err)
			assert.Empty(t, srv.Disabled, "nothing changed")
		})
	}

	// The same change from the panel's own page is done.
	resp, _ := do(t, user, http.MethodPost, f.base+"/disable", disable, map[string]string{"Origin": f.base, "Sec-Fetch-Site": "same-origin"})
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode)
	srv, err := f.store.Load(context.Background(), "fs")
	require.NoError(t, err)
	assert.Equal(t, []string{"write_file"}, srv.Disabled)
}

// TestServerStringsAreEscaped: names, descriptions and definitions come
// from servers and are shown as text.
func TestServerStringsAreEscaped(t *testing.T) {
	f := newFixture(t, `{"servers": {"x": {"approval": "manual"}}}`)
	evil := `<img src=x onerror=alert(1)><script>alert(2)</script>`
	record(t, f.store, "x", toolDef("t", evil, true))
	user := f.signedIn(t)
	for _, page := range []string{"/", "/approvals", "/server?name=x"} {
		_, body := do(t, user, http.MethodGet, f.base+page, nil, nil)
		assert.NotContains(t, body, "<img src=x", page)
		assert.NotContains(t, body, "<script>alert", page)
	}
	_, body := do(t, user, http.MethodGet, f.base+"/server?name=x", nil, nil)
	assert.Contains(t, body, "&lt;script&gt;alert(2)&lt;/script&gt;")
}

// TestServersPageShowsLoadTime: the servers page has a load-time column
// (issue 23), read from the running sidecar's status file: how long its
// current load took, nothing while it is not available.
func TestServersPageShowsLoadTime(t *testing.T) {
	statusDir := t.TempDir()
	for _, st := range []runstatus.Status{
		{Server: "fs", PID: 101, Session: runstatus.Session{Status: "available", Attempts: 1, LoadMS: 412}},
		{Server: "slow", PID: 102, Session: runstatus.Session{Status: "available", Attempts: 3, LoadMS: 2345}},
		{Server: "broken", PID: 103, Session: runstatus.Session{Status: "permanent", Attempts: 1, Error: "boom"}},
	} {
		st.StartedAt = time.Now()
		data, err := json.Marshal(st)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(statusDir, fmt.Sprintf("%d.json", st.PID)), data, 0o600))
	}
	f := newFixtureWith(t, `{}`, func(p *Panel) {
		p.StatusDir, p.Alive = statusDir, func(int) bool { return true }
	})
	user := f.signedIn(t)
	_, body := do(t, user, http.MethodGet, f.base+"/", nil, nil)
	assert.Contains(t, body, `<th scope="col" class="num">Load time</th>`)
	assert.Contains(t, body, `<td data-label="Load time" class="num">412ms</td>`)
	assert.Contains(t, body, `<td data-label="Load time" class="num">2.3s</td>`)
	assert.Contains(t, body, `<td data-label="Load time" class="num"><span class="muted">—</span></td>`, "broken: no load time while not available")
	_, body = do(t, user, http.MethodGet, f.base+"/server?name=fs", nil, nil)
	assert.Contains(t, body, "loaded in 412ms")
}

// TestConfigLockCannotBeEnabled: a tool operator policy turns off shows
// the rule and the line, has no enable control, and a forged enable is
// refused.
func TestConfigLockCannotBeEnabled(t *testing.T) {
	f := newFixture(t, "{\n  \"servers\": {\n    \"fs\": {\"tools\": {\"overrides\": {\"delete_file\": false}}}\n  }\n}")
	record(t, f.store, "fs", toolDef("delete_file", "Deletes.", false))
	require.NoError(t, f.store.Update(context.Background(), "fs", func(s *state.Server) error { s.Disable("delete_file"); return nil }))
	user := f.signedIn(t)
	_, body := do(t, user, http.MethodGet, f.base+"/server?name=fs", nil, nil)
	assert.Contains(t, body, "tools.overrides.delete_file: false")
	assert.Contains(t, body, "line 3")
	assert.NotContains(t, body, `aria-label="Enable delete_file"`)

	form := url.Values{"server": {"fs"}, "tool": {"delete_file"}, "csrf": {f.p.secrets.csrf}}
	resp, _ := do(t, user, http.MethodPost, f.base+"/enable", form, nil)
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode)
	srv, err := f.store.Load(context.Background(), "fs")
	require.NoError(t, err)
	assert.Equal(t, []string{"delete_file"}, srv.Disabled, "still disabled")
	_, body = do(t, user, http.MethodGet, f.base+"/server?name=fs", nil, nil)
	assert.Contains(t, body, "refused to enable fs/delete_file")
}

// TestApproveFromTheApprovalsPage: the diff marks the changed words and
// the button approves.
func TestApproveFromTheApprovalsPage(t *testing.T) {
	f := newFixture(t, `{"servers": {"fs": {"approval": "manual"}}}`)
	old := toolDef("read_file", "Reads a file.", true)
	approve(t, f.store, "fs", old)
	record(t, f.store, "fs", toolDef("read_file", "Reads a file and sends it away.", true))
	user := f.signedIn(t)
	_, body := do(t, user, http.MethodGet, f.base+"/approvals", nil, nil)
	assert.Contains(t, body, "<ins> and sends it away</ins>")
	assert.Contains(t, body, `aria-label="Approve read_file on fs"`)

	form := url.Values{"server": {"fs"}, "tool": {"read_file"}, "csrf": {f.p.secrets.csrf}, "back": {"/approvals"}}
	resp, _ := do(t, user, http.MethodPost, f.base+"/approve", form, nil)
	assert.Equal(t, "/approvals", resp.Header.Get("Location"))
	_, body = do(t, user, http.MethodGet, f.base+"/approvals", nil, nil)
	assert.Contains(t, body, "fs/read_file: approved")
	assert.Contains(t, body, "Nothing is waiting for approval.")
}

// TestEventsTellOfAChange: an open page's event stream says when the
// state changed under it.
func TestEventsTellOfAChange(t *testing.T) {
	f := newFixture(t, `{"servers": {"fs": {}}}`)
	record(t, f.store, "fs", toolDef("a", "A.", true))
	events := f.events(t)
	first := <-events
	record(t, f.store, "fs", toolDef("a", "A.", true), toolDef("b", "B.", true))
	awaitNewEvent(t, events, first)
}

// TestEventsTellOfAChangeToAnyOf20RunningServers: with 20 sidecars running
// (more than the 16 the panel once watched) and a poll interval of an
// hour, a change to the state of the last one reaches the open page
// through the store's watch alone.
func TestEventsTellOfAChangeToAnyOf20RunningServers(t *testing.T) {
	statusDir := t.TempDir()
	const servers = 20
	for i := range servers {
		st := runstatus.Status{Server: fmt.Sprintf("s%02d", i), PID: 1000 + i, StartedAt: time.Now(),
			Session: runstatus.Session{Status: "available", Attempts: 1}}
		data, err := json.Marshal(st)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(statusDir, fmt.Sprintf("%d.json", st.PID)), data, 0o600))
	}
	f := newFixtureWith(t, `{}`, func(p *Panel) {
		p.StatusDir, p.Alive = statusDir, func(int) bool { return true }
		p.Interval = time.Hour // only the watch can tell of the change
	})
	for i := range servers {
		record(t, f.store, fmt.Sprintf("s%02d", i), toolDef("a", "A.", true))
	}
	events := f.events(t)
	first := <-events // the page's first look, which it asks for
	user := f.signedIn(t)
	_, body := do(t, user, http.MethodGet, f.base+"/", nil, nil)
	require.Equal(t, servers, strings.Count(body, ">available<"), "every sidecar runs:\n%s", body)

	record(t, f.store, fmt.Sprintf("s%02d", servers-1), toolDef("a", "A.", true), toolDef("b", "B.", true))
	awaitNewEvent(t, events, first)
}

// events opens the panel's event stream as a signed-in page and returns
// the versions it announces, until the test ends.
func (f *fixture) events(t *testing.T) <-chan string {
	user := f.signedIn(t)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, f.base+"/events", nil)
	require.NoError(t, err)
	resp, err := user.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	events := make(chan string, 16)
	go func() {
		defer close(events)
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			for _, line := range strings.Split(string(buf[:n]), "\n") {
				if v, ok := strings.CutPrefix(line, "data: "); ok {
					events <- v
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return events
}

// awaitNewEvent waits for a version other than first on events.
func awaitNewEvent(t *testing.T, events <-chan string, first string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case v, ok := <-events:
			if !ok {
				t.Fatal("the stream ended without telling of the change")
			}
			if v != first {
				return // told
			}
		case <-timeout:
			t.Fatal("the stream did not tell of the change within 20 s")
		}
	}
}

// TestSecondLaunchFindsTheFirst: the lock file leads to the running panel.
func TestSecondLaunchFindsTheFirst(t *testing.T) {
	f := newFixture(t, `{}`)
	dir := t.TempDir()
	u, ok := Running(context.Background(), dir, nil)
	assert.False(t, ok, "none yet: %s", u)
	remove, err := Publish(dir, f.launch)
	require.NoError(t, err)
	// Publish writes this process's pid, which Running leaves out (a panel
	// does not open itself): pretend it is another's.
	data, err := os.ReadFile(filepath.Join(dir, LockName))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, LockName), []byte(strings.Replace(string(data), fmt.Sprint(os.Getpid()), "1", 1)), 0o600))
	u, ok = Running(context.Background(), dir, func(int) bool { return true })
	assert.True(t, ok)
	assert.Equal(t, f.launch, u)
	_, ok = Running(context.Background(), dir, func(int) bool { return false })
	assert.False(t, ok, "a dead panel's file is not followed")
	remove()
}
