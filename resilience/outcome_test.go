package resilience_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/resilience"
)

func TestOutcomeMessage(t *testing.T) {
	tests := []struct {
		name    string
		outcome resilience.Outcome
		want    string
	}{
		{
			name:    "transient in progress",
			outcome: resilience.Outcome{Server: "X", Class: resilience.Transient, Attempts: 3, MaxAttempts: 6, RetryIn: 1600 * time.Millisecond},
			want:    "Server 'X' is still starting up (attempt 3 of 6, retrying in 2s); its tools will appear shortly. Retry in a few seconds.",
		},
		{
			name:    "transient in the background",
			outcome: resilience.Outcome{Server: "X", Class: resilience.Transient, Attempts: 8, RetryIn: 90 * time.Second},
			want:    "Server 'X' is still not available (attempt 8, retrying in 1m30s); mcpwrap keeps retrying in the background. Retry later, or ask the user to check the server.",
		},
		{
			name:    "transient in the background after the load's budget",
			outcome: resilience.Outcome{Server: "X", Class: resilience.Transient, Attempts: 6, MaxAttempts: 6, Background: 2, RetryIn: time.Minute},
			want:    "Server 'X' is still not available (attempt 6 of 6, background retry 2, retrying in 1m); mcpwrap keeps retrying in the background. Retry later, or ask the user to check the server.",
		},
		{
			name:    "transient retrying in minutes",
			outcome: resilience.Outcome{Server: "X", Class: resilience.Transient, Attempts: 9, RetryIn: 5*time.Minute + 200*time.Millisecond},
			want:    "Server 'X' is still not available (attempt 9, retrying in 5m); mcpwrap keeps retrying in the background. Retry later, or ask the user to check the server.",
		},
		{
			name:    "transient retrying in hours",
			outcome: resilience.Outcome{Server: "X", Class: resilience.Transient, Attempts: 9, RetryIn: time.Hour},
			want:    "Server 'X' is still not available (attempt 9, retrying in 1h); mcpwrap keeps retrying in the background. Retry later, or ask the user to check the server.",
		},
		{
			name:    "transient budget spent",
			outcome: resilience.Outcome{Server: "X", Class: resilience.Transient, Attempts: 6, MaxAttempts: 6},
			want:    "Server 'X' is still starting up (attempt 6 of 6); its tools will appear shortly. Retry in a few seconds.",
		},
		{
			name: "transient with its cause",
			outcome: resilience.Outcome{Server: "X", Class: resilience.Transient, Attempts: 2, MaxAttempts: 6, RetryIn: time.Second,
				Err: &resilience.Error{Class: resilience.Transient, Reason: "HTTP 503 Service Unavailable"}},
			want: "Server 'X' is still starting up (attempt 2 of 6, retrying in 1s); its tools will appear shortly. Retry in a few seconds. Last error: HTTP 503 Service Unavailable.",
		},
		{
			name: "restart with its cause",
			outcome: resilience.Outcome{Server: "fs", Class: resilience.Transient, Attempts: 1, Restart: 1, MaxRestarts: 5,
				Err: &resilience.Error{Class: resilience.Transient, Reason: "the server exited with status 1"}},
			want: "Server 'fs' is restarting after a crash (restart 1 of 5, attempt 1); its tools will be back shortly. Retry in a few seconds. Last error: the server exited with status 1.",
		},
		{
			name:    "transient before any attempt",
			outcome: resilience.Outcome{Server: "X", Class: resilience.Transient},
			want:    "Server 'X' is still starting up; its tools will appear shortly. Retry in a few seconds.",
		},
		{
			name: "permanent with hint",
			outcome: resilience.Outcome{Server: "fs", Class: resilience.Permanent, Attempts: 1,
				Err: resilience.Classify(&resilience.SpawnError{Command: "npx", Err: errNotFoundInPath})},
			want: `Server 'fs' failed to load and needs attention: cannot start "npx": command not found. Use a full path to the command; GUI apps get a minimal PATH.`,
		},
		{
			name:    "permanent without hint",
			outcome: resilience.Outcome{Server: "fs", Class: resilience.Permanent, Err: &resilience.Error{Reason: "load canceled"}},
			want:    "Server 'fs' failed to load and needs attention: load canceled.",
		},
		{
			name:    "restarting after a crash",
			outcome: resilience.Outcome{Server: "fs", Class: resilience.Transient, Attempts: 1, Restart: 2, MaxRestarts: 5},
			want:    "Server 'fs' is restarting after a crash (restart 2 of 5, attempt 1); its tools will be back shortly. Retry in a few seconds.",
		},
		{
			name:    "restart retrying",
			outcome: resilience.Outcome{Server: "fs", Class: resilience.Transient, Attempts: 2, MaxAttempts: 6, RetryIn: 500 * time.Millisecond, Restart: 1, MaxRestarts: 5},
			want:    "Server 'fs' is restarting after a crash (restart 1 of 5, attempt 2 of 6, retrying in 500ms); its tools will be back shortly. Retry in a few seconds.",
		},
		{
			name:    "zero outcome",
			outcome: resilience.Outcome{Server: "fs"},
			want:    "Server 'fs' failed to load and needs attention: unknown error.",
		},
		{
			name:    "denied",
			outcome: resilience.Outcome{Server: "linear", Class: resilience.Denied, Attempts: 1, Err: resilience.Classify(&resilience.HTTPStatusError{StatusCode: 403, Status: "403 Forbidden"})},
			want:    "Server 'linear' denied access (HTTP 403 Forbidden). Check the credentials configured for it; retrying will not help.",
		},
		{
			name:    "idle: not started until needed",
			outcome: resilience.Outcome{Server: "fs", Class: resilience.Idle},
			want:    "Server 'fs' is not started yet; it starts on the first request that needs it.",
		},
		{
			name:    "available with one tool",
			outcome: resilience.Outcome{Server: "fs", Class: resilience.Available, Attempts: 1, Tools: []json.RawMessage{[]byte(`{}`)}},
			want:    "Server 'fs' is available with 1 tool.",
		},
		{
			name:    "available",
			outcome: resilience.Outcome{Server: "fs", Class: resilience.Available, Attempts: 1, Tools: []json.RawMessage{[]byte(`{}`), []byte(`{}`)}},
			want:    "Server 'fs' is available with 2 tools.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.outcome.Message())
		})
	}
}

func TestOutcomeMeta(t *testing.T) {
	tests := []struct {
		name    string
		outcome resilience.Outcome
		want    string
	}{
		{name: "transient", outcome: resilience.Outcome{Class: resilience.Transient, Attempts: 3}, want: `{"status":"transient","class":"transient","attempts":3,"retryable":true}`},
		{name: "restarting", outcome: resilience.Outcome{Class: resilience.Transient, Attempts: 1, Restart: 2, MaxRestarts: 5}, want: `{"status":"transient","class":"transient","attempts":1,"retryable":true,"restart":2}`},
		{name: "permanent", outcome: resilience.Outcome{Class: resilience.Permanent, Attempts: 1}, want: `{"status":"permanent","class":"permanent","attempts":1,"retryable":false}`},
		{name: "denied", outcome: resilience.Outcome{Class: resilience.Denied, Attempts: 1}, want: `{"status":"denied","class":"denied","attempts":1,"retryable":false}`},
		{name: "available", outcome: resilience.Outcome{Class: resilience.Available, Attempts: 1}, want: `{"status":"available","class":"available","attempts":1,"retryable":false}`},
		{name: "idle", outcome: resilience.Outcome{Class: resilience.Idle}, want: `{"status":"idle","class":"idle","attempts":0,"retryable":false}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.outcome.Meta())
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, string(got))
		})
	}
}

func TestClass(t *testing.T) {
	tests := []struct {
		class     resilience.Class
		word      string
		retryable bool
	}{
		{class: resilience.Available, word: "available"},
		{class: resilience.Transient, word: "transient", retryable: true},
		{class: resilience.Permanent, word: "permanent"},
		{class: resilience.Denied, word: "denied"},
		{class: resilience.Idle, word: "idle"},
	}
	for _, tt := range tests {
		t.Run(tt.word, func(t *testing.T) {
			assert.Equal(t, tt.word, tt.class.String())
			assert.Equal(t, tt.retryable, tt.class.Retryable())
			text, err := tt.class.MarshalText()
			require.NoError(t, err)
			assert.Equal(t, tt.word, string(text))
			var back resilience.Class
			require.NoError(t, back.UnmarshalText(text))
			assert.Equal(t, tt.class, back)
		})
	}

	var zero resilience.Class
	assert.Equal(t, resilience.Permanent, zero, "an unclassified failure is never retried")

	bad := resilience.Class(42)
	assert.Equal(t, "Class(42)", bad.String())
	_, err := bad.MarshalText()
	assert.ErrorIs(t, err, resilience.ErrUnknownClass)
	assert.ErrorIs(t, zero.UnmarshalText([]byte("Transient")), resilience.ErrUnknownClass)
}
