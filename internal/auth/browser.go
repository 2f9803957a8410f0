package auth

import (
	"context"
	"fmt"
	"io"
	neturl "net/url"
	"os/exec"
	"strings"
	"sync"

	"github.com/cli/browser"

	"github.com/mcpwrap/mcpwrap/internal/hostcheck"
)

// Browser opens the sign-in page: with the command in $MCPWRAP_BROWSER
// (the URL appended as its last argument; "none" never opens anything),
// else with $BROWSER, else with the OS default (github.com/cli/browser,
// the GitHub CLI's small pure-Go launcher: open, xdg-open, rundll32).
//
// A command's output goes to Output (nil discards it): stdout is the MCP
// protocol channel. The zero value reads no environment; set Getenv. A
// Browser is safe for concurrent use; Wait waits for the commands started.
type Browser struct {
	Getenv func(string) string
	Output io.Writer

	wg sync.WaitGroup
}

// Open opens url. It returns [ErrNoBrowser] when opening is switched off,
// an error matching [ErrNotWebPage] for a url [CheckWebPage] refuses, and
// does not wait for the browser to exit.
func (b *Browser) Open(ctx context.Context, url string) error {
	if err := CheckWebPage(url); err != nil {
		return err
	}
	command := b.command()
	switch {
	case command == "none":
		return ErrNoBrowser
	case command == "":
		out := b.Output
		if out == nil {
			out = io.Discard
		}
		// cli/browser writes through package variables: one launch at a time.
		osDefault.Lock()
		defer osDefault.Unlock()
		browser.Stdout, browser.Stderr = out, out
		return browser.OpenURL(url)
	}
	fields := strings.Fields(command)
	cmd := exec.Command(fields[0], append(fields[1:], url)...)
	cmd.Stdout, cmd.Stderr = b.Output, b.Output
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("opening the browser: %w", err)
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		_ = cmd.Wait() // a browser that exits non-zero still showed the page
	}()
	return nil
}

// Wait waits for the browser commands Open started to exit, or for ctx to
// be done, whichever comes first. A launcher (xdg-open, open, a wrapper
// script) exits at once; a browser run in the foreground ($BROWSER=firefox)
// lives as long as the user keeps it open, and a sidecar's shutdown must not
// wait for that: its waiting goroutine then ends with the process.
func (b *Browser) Wait(ctx context.Context) {
	done := make(chan struct{})
	go func() { b.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// CheckWebPage reports, with an error matching [ErrNotWebPage], whether raw
// must not reach a browser launcher. Only a web page may: an https URL, or
// an http URL on a loopback host (a local callback or panel). Anything
// else, such as file://localhost/..., smb://, ms-msdt: or vscode://, is
// a handler that a launcher (xdg-open, open, rundll32) runs (CVE-2025-6514
// in mcp-remote), and an authorization server's metadata can name it. A
// URL with spaces or control characters, which launchers split or
// interpret, is refused too. The error names the scheme and nothing else of
// the URL, which may carry a secret.
func CheckWebPage(raw string) error {
	if strings.IndexFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		return fmt.Errorf("%w: the address has spaces or control characters", ErrNotWebPage)
	}
	u, err := neturl.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: the address does not parse", ErrNotWebPage)
	}
	host := u.Hostname()
	switch {
	case u.Scheme == "https" && host != "":
		return nil
	case u.Scheme == "http" && hostcheck.IsLoopback(host):
		return nil
	case u.Scheme == "http":
		return fmt.Errorf("%w: plain http to another machine (%s); only https, or http on this machine, is opened", ErrNotWebPage, host)
	}
	return fmt.Errorf("%w: its scheme is %q; only https, or http on this machine, is opened", ErrNotWebPage, u.Scheme)
}

// osDefault serialises launches through cli/browser's package variables.
var osDefault sync.Mutex

// command is the configured browser command, "" for the OS default.
func (b *Browser) command() string {
	if b.Getenv == nil {
		return ""
	}
	if c := strings.TrimSpace(b.Getenv("MCPWRAP_BROWSER")); c != "" {
		return c
	}
	// $BROWSER may list alternatives separated by colons; take the first.
	c, _, _ := strings.Cut(b.Getenv("BROWSER"), ":")
	return strings.TrimSpace(c)
}

// Disabled reports whether opening is switched off.
func (b *Browser) Disabled() bool { return b.command() == "none" }
