package pgstore

import (
	"context"
	"errors"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/mcpwrap/mcpwrap/resilience"
)

// listener is a Store's notification connection and the watchers it calls
// back: of servers' states (channel mcpwrap_state) and of sign-in documents
// (authChannel), both LISTENed on the one connection. The first Watch of
// either starts its loop (listen); Close stops it and waits for it, so the
// Store owns the goroutine and Close is its one join.
type listener struct {
	store *Store

	mu       sync.Mutex
	watchers map[topic]map[chan struct{}]struct{}
	stop     context.CancelFunc // nil until the loop starts
	done     chan struct{}      // closed when the loop returns
	closed   bool
	closedCh chan struct{} // closed by close; made on first use, under mu
}

// Watch implements [state.Store]. onChange is called at once, then after
// every change of the server's state announced by any process, within the
// notification's delivery (milliseconds), and after every reconnect of the
// notification connection, as well as once when it is lost, so that the
// caller learns that the store is unavailable and, later, that it is back.
// Calls are never concurrent with each other; changes made while onChange
// runs are coalesced into one more call. Watch returns when ctx is done or
// the Store is closed.
func (s *Store) Watch(ctx context.Context, server string, onChange func()) {
	s.listener.watch(ctx, topic{channel: channel, name: server}, onChange)
}

// WatchAll implements [state.Store]: it is Watch of every server at once,
// on the same notification connection, so it costs no more than one Watch.
func (s *Store) WatchAll(ctx context.Context, onChange func()) {
	s.listener.watch(ctx, topic{channel: channel, all: true}, onChange)
}

// topic is what a watcher follows: a NOTIFY channel and a payload on it, or
// every payload on it.
type topic struct {
	channel, name string
	all           bool
}

// watch is Watch for any topic.
func (l *listener) watch(ctx context.Context, t topic, onChange func()) {
	c := make(chan struct{}, 1)
	c <- struct{}{} // the first call: the watch has begun
	closed := l.add(t, c)
	defer l.remove(t, c)
	for {
		select {
		case <-ctx.Done():
			return
		case <-closed:
			return
		case <-c:
			onChange()
		}
	}
}

// add registers c as a watcher of t, starting the loop if it does not run,
// and returns a channel closed once the store is closed.
func (l *listener) add(t topic, c chan struct{}) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closedCh == nil {
		l.closedCh = make(chan struct{})
	}
	if l.watchers == nil {
		l.watchers = make(map[topic]map[chan struct{}]struct{})
	}
	if l.watchers[t] == nil {
		l.watchers[t] = make(map[chan struct{}]struct{})
	}
	l.watchers[t][c] = struct{}{}
	if l.done == nil && !l.closed {
		ctx, stop := context.WithCancel(context.Background())
		l.stop, l.done = stop, make(chan struct{})
		go func() {
			defer close(l.done)
			l.listen(ctx)
		}()
	}
	return l.closedCh
}

func (l *listener) remove(t topic, c chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.watchers[t], c)
	if len(l.watchers[t]) == 0 {
		delete(l.watchers, t)
	}
}

// close stops the loop and waits for it.
func (l *listener) close() {
	l.mu.Lock()
	if l.closedCh == nil {
		l.closedCh = make(chan struct{})
	}
	if !l.closed {
		l.closed = true
		close(l.closedCh)
	}
	stop, done := l.stop, l.done
	l.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

// signal tells the watchers of name on channel ch to look again, and those
// of every name on ch: every watcher of ch for name "" (a payload too long
// to send), every watcher of all channels for ch "" (a reconnect).
func (l *listener) signal(ch, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for t, set := range l.watchers {
		if ch != "" && (t.channel != ch || name != "" && !t.all && t.name != name) {
			continue
		}
		for c := range set {
			select {
			case c <- struct{}{}:
			default: // a call is pending already
			}
		}
	}
}

// listen keeps a LISTEN connection until ctx is done: it connects with
// backoff, tells every watcher to look again once connected (changes may
// have been missed), relays notifications, and when the connection is lost
// tells every watcher again, so that their loads report the store
// unavailable, then reconnects.
func (l *listener) listen(ctx context.Context) {
	s := l.store
	for {
		conn, err := l.connect(ctx)
		if err != nil {
			return // ctx is done
		}
		s.pool.Reset() // pooled connections may be to the server that went away
		l.signal("", "")
		err = l.relay(ctx, conn)
		_ = conn.Close(context.WithoutCancel(ctx))
		if ctx.Err() != nil {
			return
		}
		s.logger.Warn("state store: lost the connection to PostgreSQL; serving the state loaded last until it is back",
			"store", s.where, "error", err)
		s.pool.Reset()
		l.signal("", "")
	}
}

// connect opens the notification connection and LISTENs, retrying with the
// reconnect backoff until it succeeds or ctx is done.
func (l *listener) connect(ctx context.Context) (*pgx.Conn, error) {
	s := l.store
	r := &resilience.Retrier{
		Policy:   s.opts.Reconnect,
		NewTimer: s.opts.NewTimer,
		OnRetry: func(o resilience.Outcome) {
			s.logger.Debug("state store: cannot listen for changes; retrying", "store", s.where,
				"attempt", o.Attempts, "delay_ms", o.RetryIn.Milliseconds(), "error", o.Err)
		},
	}
	if r.Policy == (resilience.Policy{}) {
		r.Policy = DefaultReconnect()
	}
	var conn *pgx.Conn
	r.Load(ctx, "state store", func(ctx context.Context, _ int) error {
		if err := s.migrated(ctx); err != nil {
			return transient(err)
		}
		c, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig)
		if err != nil {
			return transient(err)
		}
		if _, err := c.Exec(ctx, "LISTEN "+channel+"; LISTEN "+authChannel); err != nil {
			_ = c.Close(context.WithoutCancel(ctx))
			return transient(err)
		}
		conn = c
		return nil
	})
	if conn == nil {
		return nil, errors.Join(ctx.Err(), errors.New("state store: not connected"))
	}
	return conn, nil
}

// transient marks err retryable for the Retrier: every failure to reach the
// database is worth another attempt.
func transient(err error) error {
	return &resilience.Error{Class: resilience.Transient, Reason: "cannot listen for state changes", Err: err}
}

// relay signals the watchers of each notification until the connection
// fails or ctx is done.
func (l *listener) relay(ctx context.Context, conn *pgx.Conn) error {
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		l.signal(n.Channel, n.Payload)
	}
}
