package middleware

import "sync"

// goroutines counts goroutines a Session starts outside the client's and
// the upstream's pumps, so that Run can wait for them: every goroutine Run
// starts ends before it returns. A Session has two: its background work
// (catalog loads, refreshes, relayed handshakes), and the client requests
// taken off the client pump to wait (calls judged once the catalog loads,
// requests waiting for a restart), which the drain waits for too. Its zero
// value is ready to use; it is safe for concurrent use.
type goroutines struct {
	mu      sync.Mutex
	n       int
	idle    chan struct{} // closed when n drops to zero
	stopped bool
}

// Go runs f in a goroutine and reports true, or reports false once stop
// was called; the caller then does without it.
func (g *goroutines) Go(f func()) bool {
	if !g.start() {
		return false
	}
	go func() {
		defer g.done()
		f()
	}()
	return true
}

// start counts a goroutine the caller starts itself and reports true, or
// reports false once stop was called; the caller then does without it.
// Each true is undone by one done, when the goroutine ends.
func (g *goroutines) start() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return false
	}
	if g.n == 0 {
		g.idle = make(chan struct{})
	}
	g.n++
	return true
}

// done ends what start began.
func (g *goroutines) done() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n--; g.n == 0 {
		close(g.idle)
	}
}

// stop makes Go and start start nothing more and returns a channel closed
// once the goroutines counted have ended.
func (g *goroutines) stop() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopped = true
	return g.idleLocked()
}

// idleChan returns a channel closed once the goroutines counted so far
// have ended (and any started meanwhile, which the same count holds).
func (g *goroutines) idleChan() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.idleLocked()
}

func (g *goroutines) idleLocked() <-chan struct{} {
	if g.n == 0 {
		idle := make(chan struct{})
		close(idle)
		return idle
	}
	return g.idle
}
