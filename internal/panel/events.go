package panel

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"
)

// broker hands change events to the open pages' event streams. The zero
// broker is ready.
type broker struct {
	mu      sync.Mutex
	subs    map[chan string]struct{}
	version string
	kick    chan struct{} // made lazily: ask the poller to look now
}

func (b *broker) subscribe() (ch chan string, cancel func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs == nil {
		b.subs = map[chan string]struct{}{}
	}
	ch = make(chan string, 1)
	if b.version != "" {
		ch <- b.version
	}
	b.subs[ch] = struct{}{}
	return ch, func() {
		b.mu.Lock()
		delete(b.subs, ch)
		b.mu.Unlock()
	}
}

func (b *broker) listening() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs) > 0
}

// publish tells every stream about version, if it is new. A stream that
// has not taken the previous event gets only the newest.
func (b *broker) publish(version string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if version == b.version {
		return
	}
	b.version = version
	for ch := range b.subs {
		select {
		case <-ch:
		default:
		}
		ch <- version
	}
}

func (b *broker) kicks() chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.kick == nil {
		b.kick = make(chan struct{}, 1)
	}
	return b.kick
}

// nudge asks the poller to look now rather than at its next tick.
func (b *broker) nudge() {
	select {
	case b.kicks() <- struct{}{}:
	default:
	}
}

// poll looks for changes at every interval, or when nudged, while a page
// listens, and publishes the model's fingerprint.
func (p *Panel) poll(ctx context.Context) {
	t := time.NewTicker(p.interval())
	defer t.Stop()
	kick := p.events.kicks()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-kick:
		}
		if !p.events.listening() {
			continue
		}
		m := p.snapshot(ctx)
		p.events.publish(fingerprint(m))
	}
}

// fingerprint identifies what the pages show of m, leaving out what moves
// by itself (the time, uptimes, status files' refresh times).
func fingerprint(m *model) string {
	c := *m
	c.Taken = time.Time{}
	c.Servers = slices.Clone(m.Servers)
	for i := range c.Servers {
		c.Servers[i].Uptime, c.Servers[i].UpdatedAt = 0, time.Time{}
	}
	h := sha256.New()
	_ = json.NewEncoder(h).Encode(c)
	return fmt.Sprintf("%x", h.Sum(nil)[:12])
}

// watchStore nudges the poller whenever any server's state changes in the
// store, so that a sidecar's new catalog shows at once, whatever the
// number of servers: the store watches them all for the cost of one watch.
// It returns when ctx is done.
func (p *Panel) watchStore(ctx context.Context) {
	if p.Store == nil {
		return
	}
	p.Store.WatchAll(ctx, p.events.nudge)
}

// serveEvents streams a "change" event whenever what the pages show
// changed, until the page goes or the panel stops.
func (p *Panel) serveEvents(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	ch, cancel := p.events.subscribe()
	defer cancel()
	fmt.Fprint(w, "retry: 2000\n\n")
	if rc.Flush() != nil {
		return
	}
	p.events.nudge()
	for {
		select {
		case <-r.Context().Done():
			return
		case v := <-ch:
			if _, err := fmt.Fprintf(w, "event: change\ndata: %s\n\n", v); err != nil || rc.Flush() != nil {
				return
			}
		}
	}
}
