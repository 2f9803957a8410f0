package resilience_test

import (
	"context"
	"fmt"
	"os/exec"

	"github.com/mcpwrap/mcpwrap/resilience"
)

func ExampleClassify() {
	// An authorization gateway reporting its own timeout as a 403 is an
	// outage, not a decision; a clean 403 is a denial.
	gatewayTimeout := &resilience.HTTPStatusError{StatusCode: 403, Body: "upstream call timeout"}
	clean := &resilience.HTTPStatusError{StatusCode: 403}

	fmt.Println(resilience.Classify(fmt.Errorf("initialize: %w", gatewayTimeout)).Class)
	fmt.Println(resilience.Classify(fmt.Errorf("initialize: %w", clean)).Class)
	// Output:
	// transient
	// denied
}

func ExampleRetrier_Load() {
	var r resilience.Retrier // defaults: 6 attempts or 30s, 250ms doubling to 5s
	out := r.Load(context.Background(), "fs", func(ctx context.Context, attempt int) error {
		return &resilience.SpawnError{Command: "npx", Err: errNotFoundInPath}
	})
	fmt.Println(out.Attempts, out.Class)
	fmt.Println(out.Message())
	// Output:
	// 1 permanent
	// Server 'fs' failed to load and needs attention: cannot start "npx": command not found. Use a full path to the command; GUI apps get a minimal PATH.
}

var errNotFoundInPath = &exec.Error{Name: "npx", Err: exec.ErrNotFound}
