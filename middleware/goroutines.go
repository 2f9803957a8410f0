package middleware

import "sync"

// goroutines counts the background goroutines a Session starts outside
// the client's and the upstream's pumps (catalog loads, refreshes, relayed
// handshakes), so that Run can wait for them: every goroutine Run starts
// ends before it returns. Its zero value is ready to use; it is safe for
// concurrent use.
type goroutines struct {
	mu      sync.Mutex
	n       int
	idle    chan struct{} // closed when n drops to zero
	stopped bool
}

// Go runs f in a goroutine and reports true, or reports false once stop
// was called; the caller then does without it.
func (g *goroutines) Go(f func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return false
	}
	if g.n == 0 {
		g.idle = make(chan struct{})
	}
	g.n++
	go func() {
		defer g.done()
		f()
	}()
	return true
}

func (g *goroutines) done() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n--; g.n == 0 {
		close(g.idle)
	}
}

// stop makes Go start nothing more and returns a channel closed once the
// goroutines it started have ended.
func (g *goroutines) stop() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopped = true
	if g.n == 0 {
		idle := make(chan struct{})
		close(idle)
		return idle
	}
	return g.idle
}
