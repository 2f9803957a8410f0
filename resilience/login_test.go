package resilience

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLoginRequiredOutcome(t *testing.T) {
	tests := []struct {
		name     string
		outcome  Outcome
		wantText string
		wantMeta Meta
	}{
		{
			name: "login required has its own words and reason",
			outcome: Outcome{Server: "linear", Class: Denied, Attempts: 1, Err: &Error{Class: Denied, Code: CodeLoginRequired,
				Reason: "sign-in required", Hint: "A browser window has been opened; or run `mcpwrap login linear`"}},
			wantText: "Server 'linear' needs you to sign in. A browser window has been opened; or run `mcpwrap login linear`. Its tools will appear once you have signed in.",
			wantMeta: Meta{Status: "denied", Class: Denied, Attempts: 1, Retryable: false, Reason: "login_required"},
		},
		{
			name:     "a plain denial keeps its words and no reason",
			outcome:  Outcome{Server: "linear", Class: Denied, Attempts: 1, Err: &Error{Class: Denied, Reason: "HTTP 403 Forbidden"}},
			wantText: "Server 'linear' denied access (HTTP 403 Forbidden). Check the credentials configured for it; retrying will not help.",
			wantMeta: Meta{Status: "denied", Class: Denied, Attempts: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.wantText, tt.outcome.Message())
			got := tt.outcome.Meta()
			got.Restart = 0
			assert.Equal(t, tt.wantMeta, got)
		})
	}
}

func TestClassifyKeepsTheLoginCode(t *testing.T) {
	e := &Error{Class: Denied, Code: CodeLoginRequired, Reason: "sign-in required"}
	got := Classify(wrapped{e})
	assert.Same(t, e, got)
}

type wrapped struct{ err error }

func (w wrapped) Error() string { return "Post \"https://x\": " + w.err.Error() }
func (w wrapped) Unwrap() error { return w.err }
