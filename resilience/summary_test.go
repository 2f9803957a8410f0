package resilience

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

// No agent text carries a raw page or a multi-line body: a server's text in
// a reason or hint is summarised in one line, however it got there (a
// JSON-RPC message, a library's error quoting a response, an Error built
// elsewhere, as internal/auth builds its sign-in hints).
func TestClassifySummarisesServerText(t *testing.T) {
	page := "<!DOCTYPE html>\n<html>\n<head><title>502</title></head>\n<body>\n<h1>Bad Gateway</h1>\n</body>\n</html>\n"
	tests := []struct {
		name       string
		err        error
		wantReason string
		wantHint   string
	}{
		{
			name:       "a JSON-RPC message spanning lines",
			err:        &RPCError{Code: -32000, Message: "boom:\n  at line 1\n\tat line 2"},
			wantReason: "JSON-RPC error -32000: boom: at line 1 at line 2",
			wantHint:   "The server rejected a load request; check its version and its own log",
		},
		{
			name:       "a library's error quoting an error page",
			err:        errorString("registration failed with status 404 Not Found: " + page),
			wantReason: "registration failed with status 404 Not Found: (an HTML page)",
			wantHint:   "Check mcpwrap's log and the server's own output",
		},
		{
			name:       "an Error built elsewhere, with a page in its hint",
			err:        &Error{Class: Denied, Code: CodeLoginRequired, Reason: "sign-in required", Hint: "The sign-in did not complete (sign-in failed: " + page + "); run `mcpwrap login x`"},
			wantReason: "sign-in required",
			wantHint:   "The sign-in did not complete (sign-in failed: (an HTML page) ); run `mcpwrap login x`",
		},
		{
			name:       "a fragment's tags",
			err:        &RPCError{Code: -32000, Message: "<p>Service <b>paused</b></p>"},
			wantReason: "JSON-RPC error -32000: Service paused",
			wantHint:   "The server rejected a load request; check its version and its own log",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Classify(tt.err)
			assert.Equal(t, tt.wantReason, got.Reason)
			assert.Equal(t, tt.wantHint, got.Hint)
			assert.NotContains(t, Outcome{Server: "s", Class: got.Class, Err: got}.Message(), "\n")
		})
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

// FuzzSummary: whatever a server sends, a summary is one line with no
// control character and no document, and text that is one already is kept.
func FuzzSummary(f *testing.F) {
	for _, seed := range []string{"", "plain", "a\nb", "x <!DOCTYPE html><p>y", "<url>", "<HTML>\r\n", "tab\there", "\x00\x1b[31m"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		got := summary(s)
		for _, r := range got {
			if unicode.IsControl(r) {
				t.Fatalf("summary(%q) = %q has a control character", s, got)
			}
		}
		if strings.Contains(got, "  ") || strings.TrimSpace(got) != got {
			t.Fatalf("summary(%q) = %q has runs of space", s, got)
		}
		if htmlStart.MatchString(got) {
			t.Fatalf("summary(%q) = %q has a document", s, got)
		}
		if summary(got) != got {
			t.Fatalf("summary is not idempotent on %q: %q, then %q", s, got, summary(got))
		}
	})
}
