package pgstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// Doc is one named document of the mcpwrap_auth table: the sign-in store
// (internal/auth's TokenStore and Notifier, which it satisfies without
// importing it) that replicas sharing the database share. Its bytes are
// opaque here: auth writes JSON, or seals it first. A Doc is safe for
// concurrent use; it uses its Store's pool and notification connection and
// is closed with it.
type Doc struct {
	s    *Store
	name string
}

// authChannel is the NOTIFY channel of sign-in documents; a notification's
// payload is the document's name (short: stores names them).
const authChannel = "mcpwrap_auth"

// Doc returns the document called name.
func (s *Store) Doc(name string) *Doc { return &Doc{s: s, name: name} }

// String names the document's database for people, without secrets.
func (d *Doc) String() string { return "PostgreSQL " + d.s.where }

// Load returns the document, nil when there is none.
func (d *Doc) Load(ctx context.Context) ([]byte, error) {
	if err := d.s.migrated(ctx); err != nil {
		return nil, err
	}
	var doc []byte
	err := d.s.pool.QueryRow(ctx, "SELECT doc FROM mcpwrap_auth WHERE name = $1", d.name).Scan(&doc)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, d.s.fail(ctx, "load the sign-ins", err)
	}
	return doc, nil
}

// Update replaces the document with fn's result in one transaction that
// locks its row (SELECT … FOR UPDATE), so concurrent updates from every
// replica queue, and announces it with NOTIFY (delivered at commit) to
// every Watch; nothing is written when fn fails or returns the same bytes.
func (d *Doc) Update(ctx context.Context, fn func(old []byte) ([]byte, error)) error {
	if err := d.s.migrated(ctx); err != nil {
		return err
	}
	tx, err := d.s.pool.Begin(ctx)
	if err != nil {
		return d.s.fail(ctx, "update the sign-ins", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, "INSERT INTO mcpwrap_auth (name) VALUES ($1) ON CONFLICT (name) DO NOTHING", d.name); err != nil {
		return d.s.fail(ctx, "update the sign-ins", err)
	}
	var old []byte
	if err := tx.QueryRow(ctx, "SELECT doc FROM mcpwrap_auth WHERE name = $1 FOR UPDATE", d.name).Scan(&old); err != nil {
		return d.s.fail(ctx, "update the sign-ins", err)
	}
	doc, err := fn(old)
	if err != nil {
		return err
	}
	if bytes.Equal(doc, old) {
		return nil
	}
	if _, err := tx.Exec(ctx, "UPDATE mcpwrap_auth SET doc = $2, revision = revision + 1, updated_at = now() WHERE name = $1",
		d.name, doc); err != nil {
		return d.s.fail(ctx, "update the sign-ins", err)
	}
	if _, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", authChannel, payload(d.name)); err != nil {
		return d.s.fail(ctx, "update the sign-ins", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return d.s.fail(ctx, "update the sign-ins", err)
	}
	return nil
}

// Watch calls onChange at once, then after every Update of the document by
// any process (within the notification's delivery), after every reconnect
// of the Store's notification connection (changes may have been missed)
// and once when it is lost, so that the caller's next Load reports the
// outage, and later finds what it missed. It shares the connection and the
// guarantees of [Store.Watch]: no periodic query, calls never concurrent,
// changes during a call coalesced into one more. It returns when ctx is
// done or the Store is closed.
func (d *Doc) Watch(ctx context.Context, onChange func()) {
	d.s.listener.watch(ctx, topic{channel: authChannel, name: d.name}, onChange)
}

// Generation returns the document's revision, which every Update moves.
func (d *Doc) Generation(ctx context.Context) (string, error) {
	if err := d.s.migrated(ctx); err != nil {
		return "", err
	}
	var rev int64
	err := d.s.pool.QueryRow(ctx, "SELECT revision FROM mcpwrap_auth WHERE name = $1", d.name).Scan(&rev)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", d.s.fail(ctx, "read the sign-ins' revision", err)
	}
	return strconv.FormatInt(rev, 10), nil
}

// Lock takes the named session-level advisory lock of this document on a
// connection of its own, waiting until ctx is done, so that one process of
// all replicas holds it (a refresh, a sign-in). The release closes that
// connection, as does the process's death: a lock never outlives its
// holder.
func (d *Doc) Lock(ctx context.Context, name string) (func(), error) {
	unlock, ok, err := d.lock(ctx, name, "SELECT true FROM pg_advisory_lock($1)")
	if err == nil && !ok {
		err = errors.New("the advisory lock was not granted")
	}
	return unlock, err
}

// TryLock takes the named lock only if no process holds it.
func (d *Doc) TryLock(ctx context.Context, name string) (func(), bool, error) {
	return d.lock(ctx, name, "SELECT pg_try_advisory_lock($1)")
}

// lockCloseTimeout bounds closing a lock's connection.
const lockCloseTimeout = 5 * time.Second

func (d *Doc) lock(ctx context.Context, name, query string) (func(), bool, error) {
	if err := d.s.migrated(ctx); err != nil {
		return nil, false, err
	}
	conn, err := pgx.ConnectConfig(ctx, d.s.pool.Config().ConnConfig)
	if err != nil {
		return nil, false, d.s.fail(ctx, "lock the sign-ins", err)
	}
	release := func() {
		ctx, cancel := context.WithTimeout(context.Background(), lockCloseTimeout)
		defer cancel()
		_ = conn.Close(ctx) // the session's end releases its advisory locks
	}
	var ok bool
	if err := conn.QueryRow(ctx, query, advisoryKey(d.name, name)).Scan(&ok); err != nil {
		release()
		return nil, false, d.s.fail(ctx, "lock the sign-ins", err)
	}
	if !ok {
		release()
		return nil, false, nil
	}
	return release, true, nil
}

// advisoryKey is the advisory lock key of lock name of document doc: a
// digest, in the key space beside the migrations' lock.
func advisoryKey(doc, name string) int64 {
	sum := sha256.Sum256([]byte("mcpwrap_auth\x00" + doc + "\x00" + name))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}
