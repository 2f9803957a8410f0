package panel

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/auth"
	"github.com/mcpwrap/mcpwrap/internal/toolscli"
)

//go:embed assets
var assets embed.FS

// maxFormBytes bounds a change's form.
const maxFormBytes = 64 << 10

var funcs = template.FuncMap{
	"join": strings.Join,
	"state": func(s SignIn, now time.Time) string {
		switch {
		case !s.SignedIn:
			return "needs sign-in"
		case s.Expiry.IsZero():
			return "signed in"
		case s.Expiry.After(now):
			return "signed in, expires in " + s.Expiry.Sub(now).Round(time.Minute).String()
		case s.Refreshable:
			return "signed in (renews on next use)"
		}
		return "needs sign-in (expired)"
	},
}

// pages are parsed once: the layout with each page.
var pages = func() map[string]*template.Template {
	out := map[string]*template.Template{}
	for _, name := range []string{"servers", "approvals", "server", "signins", "clients", "preview"} {
		out[name] = template.Must(template.New("layout").Funcs(funcs).ParseFS(assets, "assets/layout.html", "assets/"+name+".html"))
	}
	return out
}()

var static = func() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err)
	}
	return http.StripPrefix("/static/", http.FileServer(http.FS(sub)))
}()

// ServeHTTP implements [http.Handler]: the guards first, in order (Host and
// Origin, the session, the CSRF token of a change), then one method per
// page or change.
func (p *Panel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.once.Do(p.init)
	securityHeaders(w.Header())
	switch r.URL.Path {
	case "/open":
		p.exchange(w, r)
		return
	case "/static/app.js", "/static/app.css", "/static/icon.svg":
		if status, err := p.guard(r); status == http.StatusForbidden {
			p.refuse(w, r, status, err)
			return
		}
		static.ServeHTTP(w, r)
		return
	}
	if status, err := p.guard(r); status != 0 {
		p.refuse(w, r, status, err)
		return
	}
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if !p.checkCSRF(r) {
			p.refuse(w, r, http.StatusForbidden, errBadCSRF)
			return
		}
		p.serveChange(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, POST")
		p.refuse(w, r, http.StatusMethodNotAllowed, errors.New("use GET or POST"))
		return
	}
	if r.URL.Path == "/events" {
		p.serveEvents(w, r)
		return
	}
	p.servePage(w, r)
}

// view is what a page's template gets.
type view struct {
	Title, Page string
	M           *model
	Version     string
	CSRF        string
	Flash       string
	Now         time.Time
	Back        string

	// The servers, approvals and server pages.
	Groups     []pendingGroup
	S          serverRow
	Pending    []pendingItem
	ConfigPath string
	// The sign-ins page: sign-ins under way, by server.
	Signing map[string]string
	// The preview page.
	Path, Entry string
	Uninstall   bool
	Plan        []Change
	PlanErr     string
}

type pendingGroup struct {
	Server string
	Items  []pendingItem
}

// pendingItem is one tool pending approval, with its diff.
type pendingItem struct {
	Server, CSRF, Back string
	Tool               toolscli.Tool
	Diff               diffTable
	Changed            []string
}

type diffTable struct {
	Caption string
	Rows    []diffRow
}

func (p *Panel) pendingItems(s serverRow, back string) []pendingItem {
	var out []pendingItem
	for _, t := range s.pending() {
		rows := definitionDiff(t.Approved, t.Current)
		out = append(out, pendingItem{
			Server: s.Name, CSRF: p.secrets.csrf, Back: back, Tool: t,
			Diff:    diffTable{Caption: "How " + t.Name + " changed", Rows: rows},
			Changed: changedMembers(rows),
		})
	}
	return out
}

func (p *Panel) servePage(w http.ResponseWriter, r *http.Request) {
	m := p.snapshot(r.Context())
	v := view{M: m, Version: fingerprint(m), CSRF: p.secrets.csrf, Now: m.Taken, Back: r.URL.RequestURI()}
	if r.Header.Get("X-Panel-Refresh") == "" {
		v.Flash = p.takeFlash()
	}
	switch r.URL.Path {
	case "/":
		v.Title, v.Page = "Servers", "servers"
	case "/approvals":
		v.Title, v.Page = "Approvals", "approvals"
		for _, s := range m.Servers {
			if items := p.pendingItems(s, "/approvals"); len(items) > 0 {
				v.Groups = append(v.Groups, pendingGroup{Server: s.Name, Items: items})
			}
		}
	case "/server":
		s, ok := m.server(r.URL.Query().Get("name"))
		if !ok {
			p.refuse(w, r, http.StatusNotFound, errUnknownPage)
			return
		}
		v.Title, v.Page, v.S = s.Name, "server", s
		v.Pending = p.pendingItems(s, v.Back)
		if tools, err := p.Tools(r.Context()); err == nil && tools.Config() != nil {
			v.ConfigPath = tools.Config().Path
		}
	case "/signins":
		v.Title, v.Page = "Sign-ins", "signins"
		p.mu.Lock()
		v.Signing = make(map[string]string, len(p.signings))
		for k, u := range p.signings {
			v.Signing[k] = u
		}
		p.mu.Unlock()
	case "/clients":
		v.Title, v.Page = "Client configs", "clients"
	default:
		p.refuse(w, r, http.StatusNotFound, errUnknownPage)
		return
	}
	p.render(w, http.StatusOK, v)
}

func (p *Panel) render(w http.ResponseWriter, status int, v view) {
	var buf bytes.Buffer
	if err := pages[v.Page].ExecuteTemplate(&buf, "layout", v); err != nil {
		p.log.Error("panel: rendering a page", "page", v.Page, "error", err)
		http.Error(w, "the page could not be rendered; see mcpwrap's log", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// refuse answers a refused request with its reason, as a page.
func (p *Panel) refuse(w http.ResponseWriter, r *http.Request, status int, err error) {
	if status != http.StatusNotFound {
		p.log.Warn("panel: request refused", "path", r.URL.Path, "status", status, "reason", err.Error())
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, "%s: %v\n", http.StatusText(status), err)
}

// serveChange runs one change (a POST with a valid token), then sends the
// browser back to the page it came from with what it did.
func (p *Panel) serveChange(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	server, tool := r.PostFormValue("server"), r.PostFormValue("tool")
	var msg string
	var err error
	switch r.URL.Path {
	case "/approve":
		msg, err = p.toolChange(ctx, server, func(t *toolscli.Tools) (*toolscli.Outcome, error) {
			if r.PostFormValue("all") != "" {
				return t.Approve(ctx, server, nil, true)
			}
			return t.Approve(ctx, server, []string{tool}, false)
		})
	case "/keep":
		msg = fmt.Sprintf("%s/%s stays locked: agents cannot call it until you approve it.", server, tool)
	case "/enable":
		msg, err = p.toolChange(ctx, server, func(t *toolscli.Tools) (*toolscli.Outcome, error) {
			return t.Enable(ctx, server, []string{tool})
		})
	case "/disable":
		msg, err = p.toolChange(ctx, server, func(t *toolscli.Tools) (*toolscli.Outcome, error) {
			return t.Disable(ctx, server, []string{tool})
		})
	case "/signin":
		msg, err = p.signIn(server)
	case "/signout":
		msg, err = p.signOut(ctx, server)
	case "/clients/preview":
		p.preview(w, r)
		return
	case "/clients/apply":
		msg, err = p.apply(ctx, r)
	default:
		p.refuse(w, r, http.StatusNotFound, errUnknownPage)
		return
	}
	if err != nil {
		msg = "Not done: " + err.Error()
	}
	p.setFlash(msg)
	p.events.nudge()
	http.Redirect(w, r, back(r), http.StatusSeeOther)
}

// back is where a change sends the browser: the page it names, if it is
// one of the panel's, else the servers page.
func back(r *http.Request) string {
	b := r.PostFormValue("back")
	if !strings.HasPrefix(b, "/") || strings.HasPrefix(b, "//") || strings.ContainsAny(b, "\\\r\n") {
		switch r.URL.Path {
		case "/signin", "/signout":
			return "/signins"
		case "/clients/apply":
			return "/clients"
		}
		return "/"
	}
	return b
}

// toolChange runs a toolscli change and says what it did, refusals first.
func (p *Panel) toolChange(ctx context.Context, server string, fn func(*toolscli.Tools) (*toolscli.Outcome, error)) (string, error) {
	if server == "" {
		return "", errors.New("no server named")
	}
	tools, err := p.Tools(ctx)
	if err != nil {
		return "", err
	}
	o, err := fn(tools)
	if err != nil {
		return "", err
	}
	lines := append(append(o.Refusals, o.Results...), o.Warnings...)
	return strings.Join(lines, " "), nil
}

// signIn starts the same sign-in as `mcpwrap login` in the background: a
// browser tab opens at the server's sign-in page, and the page says so
// until it completes.
func (p *Panel) signIn(server string) (string, error) {
	if p.SignIns == nil || server == "" {
		return "", errors.New("sign-ins are not available")
	}
	p.mu.Lock()
	if _, ok := p.signings[server]; ok {
		p.mu.Unlock()
		return "A sign-in to " + server + " is already under way.", nil
	}
	p.signings[server] = ""
	ctx, stop := context.WithCancel(context.Background())
	p.mu.Unlock()
	p.logins.Go(func() {
		defer stop()
		go func() { // ends the sign-in when the panel stops
			select {
			case <-ctx.Done():
			case <-p.stopped():
				stop()
			}
		}()
		err := p.SignIns.Login(ctx, server, func(u string) {
			if auth.CheckWebPage(u) != nil {
				return // never a link to anything but a web page
			}
			p.mu.Lock()
			p.signings[server] = u
			p.mu.Unlock()
			p.events.nudge()
		})
		p.mu.Lock()
		delete(p.signings, server)
		p.mu.Unlock()
		switch {
		case errors.Is(err, auth.ErrNotProtected):
			p.setFlash(server + " does not ask for a sign-in (or you are signed in already).")
		case err != nil:
			p.setFlash("Sign-in to " + server + " failed: " + err.Error())
		default:
			p.setFlash("Signed in to " + server + ". Its running sidecars pick it up.")
		}
		p.events.nudge()
	})
	return "Signing in to " + server + ": finish in the browser tab that opened.", nil
}

func (p *Panel) signOut(ctx context.Context, server string) (string, error) {
	if p.SignIns == nil || server == "" {
		return "", errors.New("sign-ins are not available")
	}
	found, err := p.SignIns.Logout(ctx, server)
	switch {
	case err != nil:
		return "", err
	case found:
		return "Signed out of " + server + ".", nil
	}
	return "Not signed in to " + server + ".", nil
}

// preview shows the dry-run plan of an install or uninstall, with the
// button that applies it.
func (p *Panel) preview(w http.ResponseWriter, r *http.Request) {
	m := p.snapshot(r.Context())
	v := view{Title: "Preview", Page: "preview", M: m, Version: fingerprint(m), CSRF: p.secrets.csrf, Now: m.Taken,
		Path: r.PostFormValue("path"), Entry: r.PostFormValue("entry"), Uninstall: r.PostFormValue("op") == "uninstall"}
	if p.Clients == nil {
		v.PlanErr = "client configs are not available"
	} else if plan, err := p.Clients.Plan(r.Context(), v.Path, v.Entry, v.Uninstall); err != nil {
		v.PlanErr = err.Error()
	} else {
		v.Plan = plan
	}
	p.render(w, http.StatusOK, v)
}

func (p *Panel) apply(ctx context.Context, r *http.Request) (string, error) {
	if p.Clients == nil {
		return "", errors.New("client configs are not available")
	}
	path, entry, uninstall := r.PostFormValue("path"), r.PostFormValue("entry"), r.PostFormValue("op") == "uninstall"
	plan, backup, err := p.Clients.Apply(ctx, path, entry, uninstall)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, c := range plan {
		fmt.Fprintf(&b, "%s %s: %s. ", c.Action, c.Server, c.Detail)
	}
	if backup == "" {
		b.WriteString("Nothing was written.")
	} else {
		fmt.Fprintf(&b, "Written; backup: %s. Restart the client to apply the change.", backup)
	}
	return b.String(), nil
}

// stopped returns a channel closed once Shutdown began.
func (p *Panel) stopped() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		p.done = make(chan struct{})
		if p.closed {
			close(p.done)
		}
	}
	return p.done
}
