package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpwrap/mcpwrap/internal/policy"
)

// FuzzLoad parses arbitrary bytes: it must never panic, and must yield
// either a File whose every server is usable or an *Error naming the file
// and a position.
func FuzzLoad(f *testing.F) {
	for _, name := range []string{"design.json", "full.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, seed := range []string{
		``, `{}`, `[]`, `null`, `{"servers": {"a": {}}}`, `{"server": {}}`, `{"servers": {"a": {}, "a": {}}}`,
		`{"defaults": {"ready_timeout": "30"}}`, `{"defaults": {"retry": {"max_attempts": 1e400}}}`,
		`{"defaults": {"tools": {"overrides": {"[": true}}}}`, `{"defaults": {"env": {"A=B": "x"}}}`,
		"{\"servers\": {\"\xff\": {}}}", `{"a": [[[[[[]]]]]]}`, `{"servers": {"a": {"enabled": true},}}`,
	} {
		f.Add([]byte(seed))
	}
	const name = "fuzz/config.json"
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(name, data)
		if err != nil {
			cfgErr, ok := err.(*Error)
			if !ok || !strings.HasPrefix(err.Error(), name+":") || cfgErr.Line < 1 || cfgErr.Column < 1 {
				t.Fatalf("error %q does not name the file and a position", err)
			}
			return
		}
		for _, server := range append(file.Names(), "not-configured") {
			s := file.Server(server)
			if _, err := policy.NewEvaluator(policy.Options{Rules: s.Tools, Approval: s.Approval}); err != nil {
				t.Fatalf("server %q: rules do not compile: %v", server, err)
			}
			r := s.Retry
			if s.ReadyTimeout <= 0 || r.Initial <= 0 || r.MaxInterval <= 0 || r.MaxElapsed <= 0 ||
				r.MaxAttempts < 1 || r.Multiplier < 1 || r.Jitter < 0 || r.Jitter > 1 ||
				s.MaxLineBytes < MinMaxLineBytes || s.DiscoveryTool == "" {
				t.Fatalf("server %q: invalid effective settings %+v", server, s)
			}
		}
	})
}
