package resilience

import (
	"strings"
	"testing"
)

// FuzzExplainingLines: whatever a server prints, at most n of its lines are
// quoted, each one of them, trimmed and non-blank.
func FuzzExplainingLines(f *testing.F) {
	f.Add("config {\n  port: 9443\n}\nnpm notice update available")
	f.Add("Traceback (most recent call last):\n  File x\nValueError: bad")
	f.Add("goroutine 1 [running]:\nmain.main()\n\n")
	f.Fuzz(func(t *testing.T, text string) {
		lines := strings.Split(text, "\n")
		got := explainingLines(lines, 3)
		if len(got) > 3 {
			t.Fatalf("%d lines quoted", len(got))
		}
		for _, g := range got {
			if g == "" || g != strings.TrimSpace(g) || !strings.Contains(text, g) {
				t.Fatalf("quoted %q, not a trimmed line of the input", g)
			}
		}
	})
}

// FuzzCommandLine: the value of an option that names a secret never
// appears in the suggested command line.
func FuzzCommandLine(f *testing.F) {
	f.Add("npx", "--api-key", "s3cr3t-value")
	f.Add("uvx", "--token=", "abc'def")
	f.Fuzz(func(t *testing.T, program, opt, secret string) {
		if !isSecretFlag(opt) || strings.Contains(strings.TrimSuffix(opt, "="), "=") || len(secret) < 6 || strings.Contains(program+opt, secret) ||
			strings.Contains("'\\*** =", secret) {
			return
		}
		argv := []string{program, opt, secret}
		if strings.HasSuffix(opt, "=") {
			argv = []string{program, opt + secret}
		}
		if line := commandLine(argv); strings.Contains(line, secret) {
			t.Fatalf("commandLine(%q) = %q shows the secret", argv, line)
		}
	})
}
