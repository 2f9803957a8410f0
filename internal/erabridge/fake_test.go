package erabridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/middleware"
)

// fakeUpstream is an upstream's Conn whose messages a test writes and
// reads by hand: what the upstream says, what it was sent.
type fakeUpstream struct {
	says   chan item   // to the bridge: a message, or a read's error
	got    chan []byte // from the bridge
	closed chan struct{}
	once   sync.Once
}

func newFakeUpstream() *fakeUpstream {
	return &fakeUpstream{says: make(chan item, 64), got: make(chan []byte, 64), closed: make(chan struct{})}
}

func (f *fakeUpstream) ReadMessage() ([]byte, error) {
	select {
	case it := <-f.says:
		return it.msg, it.err
	case <-f.closed:
		return nil, io.EOF
	}
}

func (f *fakeUpstream) WriteMessage(ctx context.Context, msg []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case f.got <- bytes.Clone(msg):
		return nil
	case <-f.closed:
		return io.ErrClosedPipe
	}
}

func (f *fakeUpstream) Close() error {
	f.once.Do(func() { close(f.closed) })
	return nil
}

// manualTimers is an AfterFunc whose timers fire when the test says.
type manualTimers struct {
	mu  sync.Mutex
	fns []*manualTimer
}

type manualTimer struct {
	f       func()
	stopped bool
}

func (m *manualTimers) AfterFunc(_ time.Duration, f func()) interface{ Stop() bool } {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := &manualTimer{f: f}
	m.fns = append(m.fns, t)
	return t
}

func (t *manualTimer) Stop() bool { was := !t.stopped; t.stopped = true; return was }

// fireAll runs every timer not stopped.
func (m *manualTimers) fireAll() {
	m.mu.Lock()
	fns := m.fns
	m.fns = nil
	m.mu.Unlock()
	for _, t := range fns {
		if !t.stopped {
			t.f()
		}
	}
}

// rig is a bridge between a test playing the Session and a fake upstream.
type rig struct {
	t      *testing.T
	up     *fakeUpstream
	conn   middleware.Conn
	reads  chan []byte                         // what the Session reads
	failed chan *middleware.RequestFailedError // requests the Session reads as failed
	timers *manualTimers
	done   chan struct{}
}

func newRig(t *testing.T, opts Options) *rig {
	t.Helper()
	r := &rig{t: t, up: newFakeUpstream(), reads: make(chan []byte, 64), failed: make(chan *middleware.RequestFailedError, 8), timers: &manualTimers{}, done: make(chan struct{})}
	opts.AfterFunc = r.timers.AfterFunc
	r.conn = Wrap(r.up, opts)
	go func() { // the Session's reader
		defer close(r.done)
		for {
			msg, err := r.conn.ReadMessage()
			if f, ok := errors.AsType[*middleware.RequestFailedError](err); ok {
				r.failed <- f
				continue
			}
			if err != nil {
				return
			}
			r.reads <- bytes.Clone(msg)
		}
	}()
	t.Cleanup(func() {
		require.NoError(t, r.conn.Close())
		<-r.done
	})
	return r
}

const wait = 10 * time.Second // a bound on a message that must come, never a synchronisation

// write is the Session writing msg.
func (r *rig) write(msg string) {
	r.t.Helper()
	require.NoError(r.t, r.conn.WriteMessage(context.Background(), []byte(msg)))
}

// say is the upstream sending msg.
func (r *rig) say(msg string) { r.up.says <- item{msg: []byte(msg)} }

// fail is the upstream's transport reporting that the request id (raw
// JSON) will get no answer.
func (r *rig) fail(id []byte, err error) {
	r.up.says <- item{err: &middleware.RequestFailedError{ID: id, Err: err}}
}

// upGets returns the next message the upstream was sent.
func (r *rig) upGets() framing.Envelope {
	r.t.Helper()
	select {
	case m := <-r.up.got:
		env, err := framing.Peek(m)
		require.NoError(r.t, err, string(m))
		return env
	case <-time.After(wait):
		r.t.Fatal("the upstream was sent nothing")
	}
	return framing.Envelope{}
}

// reads returns the next message the Session reads.
func (r *rig) read() framing.Envelope {
	r.t.Helper()
	select {
	case m := <-r.reads:
		env, err := framing.Peek(m)
		require.NoError(r.t, err, string(m))
		return env
	case <-time.After(wait):
		r.t.Fatal("the Session read nothing")
	}
	return framing.Envelope{}
}

// readRaw returns the next message the Session reads, as bytes.
func (r *rig) readRaw() []byte {
	r.t.Helper()
	select {
	case m := <-r.reads:
		return m
	case <-time.After(wait):
		r.t.Fatal("the Session read nothing")
	}
	return nil
}

// decode decodes raw JSON into a generic value.
func decode(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal(raw, &v), string(raw))
	return v
}
