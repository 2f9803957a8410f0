package upstream

import (
	"bytes"
	"strings"
	"sync"
)

// Defaults for the stderr tail kept for diagnosis.
const (
	// DefaultStderrLines is how many stderr lines a [Process] keeps when
	// [Command.StderrLines] is zero.
	DefaultStderrLines = 20

	// MaxStderrLineBytes caps each line kept in the tail; longer lines are
	// cut and end in "…". Pass-through to [Command.Stderr] is not cut.
	MaxStderrLineBytes = 512
)

// lineRing keeps the last lines written to it. Writes may split or join
// lines arbitrarily; a line ends at '\n'. Blank lines are not kept (they
// carry nothing for diagnosis), a trailing '\r' is dropped, and each line is
// capped at maxLine bytes so memory stays bounded whatever the child prints.
//
// A lineRing is safe for concurrent use.
type lineRing struct {
	mu      sync.Mutex
	maxLine int
	lines   []string // circular once len == cap
	next    int      // index of the oldest line once the ring is full
	partial []byte   // the unterminated current line, at most maxLine bytes
	cut     bool     // partial lost bytes beyond maxLine
}

func newLineRing(lines, maxLine int) *lineRing {
	return &lineRing{maxLine: maxLine, lines: make([]string, 0, lines)}
}

// Write records p. It never fails.
func (r *lineRing) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			r.appendPartial(p)
			break
		}
		r.appendPartial(p[:i])
		r.push(r.finish())
		p = p[i+1:]
	}
	return n, nil
}

// Lines returns the kept lines, oldest first, including an unterminated
// last line. The result is a copy.
func (r *lineRing) Lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, cap(r.lines)+1)
	out = append(out, r.lines[r.next:]...)
	out = append(out, r.lines[:r.next]...)
	if last := r.render(); last != "" {
		out = append(out, last)
		if len(out) > cap(r.lines) {
			out = out[1:]
		}
	}
	return out
}

func (r *lineRing) appendPartial(p []byte) {
	if room := r.maxLine - len(r.partial); len(p) > room {
		p = p[:room]
		r.cut = true
	}
	r.partial = append(r.partial, p...)
}

// finish ends the current line and returns it rendered.
func (r *lineRing) finish() string {
	s := r.render()
	r.partial = r.partial[:0]
	r.cut = false
	return s
}

// render turns the partial line into a kept line: valid UTF-8 (a rune cut at
// the cap becomes U+FFFD), no trailing '\r', "…" when cut, "" when blank.
func (r *lineRing) render() string {
	s := strings.TrimSuffix(string(r.partial), "\r")
	if strings.TrimSpace(s) == "" {
		return ""
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if r.cut {
		s += "…"
	}
	return s
}

func (r *lineRing) push(s string) {
	switch {
	case s == "" || cap(r.lines) == 0:
	case len(r.lines) < cap(r.lines):
		r.lines = append(r.lines, s)
	default:
		r.lines[r.next] = s
		r.next = (r.next + 1) % len(r.lines)
	}
}
