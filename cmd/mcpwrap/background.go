package main

import (
	"context"
	"sync"
)

// goUntilStopped runs run in a goroutine with a context derived from ctx.
// The returned stop cancels that context and waits for run to return, so
// that the caller, which defers stop, owns the goroutine: nothing it
// started outlives the command.
func goUntilStopped(ctx context.Context, run func(ctx context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { run(ctx) })
	return func() {
		cancel()
		wg.Wait()
	}
}
