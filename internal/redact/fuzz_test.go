package redact

import (
	"strings"
	"testing"
)

// FuzzText holds Text's promise: what it keeps of a URL is its origin, so
// a marker placed after the host (in a path, query or fragment) or before
// it (user info) never survives, and text without "://" is unchanged.
func FuzzText(f *testing.F) {
	for _, seed := range []string{
		`Post "https://user:pw@h/mcp?api_key=`, `issuer URL "http://127.0.0.1:1?k=`,
		"a https://h/1?k=", "http://[::1/", "://", "x://y://", "https://h#", "HTTP://H:1/",
	} {
		f.Add(seed, "x")
	}
	f.Fuzz(func(t *testing.T, prefix, tail string) {
		const marker = "SECRETMARK"
		if strings.Contains(prefix, marker) || strings.Contains(tail, marker) {
			return
		}
		text := prefix + "/" + marker + tail
		if strings.Contains(prefix, "://") && !strings.ContainsAny(prefix[strings.LastIndex(prefix, "://"):], "\"' \t\n\r<>`") {
			// The marker sits inside the last URL of the text.
			if strings.Contains(Text(text), marker) {
				t.Fatalf("Text(%q) = %q keeps what follows the host", text, Text(text))
			}
		}
		if !strings.Contains(text, "://") && Text(text) != text {
			t.Fatalf("Text(%q) = %q changed text without a URL", text, Text(text))
		}
	})
}
