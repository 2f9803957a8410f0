// Package storetest is the conformance suite of [state.Store] ([Run]), which
// every implementation passes, and [Memory], a trivial in-memory store for
// tests of the store's users.
package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/mcpwrap/mcpwrap/internal/state"
)

// Memory is a [state.Store] kept in memory: each server's state as the
// document [state.Marshal] renders, so that what Load returns is the
// caller's own and a document can be corrupted ([Memory.Corrupt]). The zero
// value is an empty store, ready to use. It is safe for concurrent use; one
// Memory stands for every process sharing a store.
type Memory struct {
	mu       sync.Mutex
	docs     map[string][]byte
	watchers map[watchKey][]chan struct{}
}

// watchKey files WatchAll's watchers apart from the servers' ("" is a
// server name like any other).
type watchKey struct {
	server string
	all    bool
}

var _ state.Store = (*Memory)(nil)

// Load implements [state.Store].
func (m *Memory) Load(_ context.Context, server string) (*state.Server, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.load(server)
}

func (m *Memory) load(server string) (*state.Server, error) {
	doc, ok := m.docs[server]
	if !ok {
		return &state.Server{}, nil
	}
	srv, err := state.Unmarshal(doc, server)
	if err != nil {
		return nil, &state.CorruptError{Where: fmt.Sprintf("of server %q in memory", server), Server: server, Err: err}
	}
	return srv, nil
}

// Update implements [state.Store]; updates are serialised by one lock.
func (m *Memory) Update(_ context.Context, server string, fn func(*state.Server) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	srv, err := m.load(server)
	if err != nil {
		return err
	}
	if err := fn(srv); err != nil {
		return err
	}
	old, had := m.docs[server]
	if srv.Empty() {
		if !had {
			return nil
		}
		delete(m.docs, server)
	} else {
		doc, err := state.Marshal(server, srv)
		if err != nil {
			return err
		}
		if had && string(doc) == string(old) {
			return nil
		}
		if m.docs == nil {
			m.docs = make(map[string][]byte)
		}
		m.docs[server] = doc
	}
	m.notify(server)
	return nil
}

// Corrupt replaces the named server's document with doc, as a hand edit
// gone wrong would.
func (m *Memory) Corrupt(server string, doc []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.docs == nil {
		m.docs = make(map[string][]byte)
	}
	m.docs[server] = slices.Clone(doc)
	m.notify(server)
}

// notify signals the server's watchers; the caller holds m.mu.
func (m *Memory) notify(server string) {
	for _, c := range m.watchers[watchKey{server: server}] {
		signal(c)
	}
	for _, c := range m.watchers[watchKey{all: true}] {
		signal(c)
	}
}

// Watch implements [state.Store]: onChange is called once at once, then
// after every change of the server's state, until ctx is done.
func (m *Memory) Watch(ctx context.Context, server string, onChange func()) {
	m.watch(ctx, watchKey{server: server}, onChange)
}

// WatchAll implements [state.Store]: onChange is called once at once, then
// after every change of any server's state, until ctx is done.
func (m *Memory) WatchAll(ctx context.Context, onChange func()) {
	m.watch(ctx, watchKey{all: true}, onChange)
}

func (m *Memory) watch(ctx context.Context, key watchKey, onChange func()) {
	c := make(chan struct{}, 1)
	c <- struct{}{}
	m.mu.Lock()
	if m.watchers == nil {
		m.watchers = make(map[watchKey][]chan struct{})
	}
	m.watchers[key] = append(m.watchers[key], c)
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.watchers[key] = slices.DeleteFunc(m.watchers[key], func(w chan struct{}) bool { return w == c })
		m.mu.Unlock()
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c:
			onChange()
		}
	}
}

// Servers implements [state.Store].
func (m *Memory) Servers(context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var names []string
	for name := range m.docs {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// signal records a change without blocking; pending changes coalesce.
func signal(c chan<- struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
