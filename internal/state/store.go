package state

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gofrs/flock"

	"github.com/mcpwrap/mcpwrap/internal/atomicfile"
	"github.com/mcpwrap/mcpwrap/internal/filewatch"
)

// Waiting for a lock held by another process polls, because flock has no
// cancellable blocking wait; the delay doubles between these bounds.
const (
	minLockDelay = time.Millisecond
	maxLockDelay = 20 * time.Millisecond
)

// FileStore is the [Store] kept in a state directory: one file per server in
// its [ServersDir] (see fileName), each with its own lock file. It is safe
// for concurrent use by multiple goroutines, and by multiple processes
// sharing the directory, each with its own FileStore.
type FileStore struct {
	dir    string
	logger *slog.Logger
	// writer is held by this process's goroutine inside Update, so that the
	// others queue here cheaply instead of polling the file lock.
	writer chan struct{}
	// watch holds the timings and seams of Watch and WatchAll (zero: the
	// defaults); tests shorten and replace them.
	watch filewatch.Watch
}

var _ Store = (*FileStore)(nil)

// Open returns the store kept in dir. It does not touch the disk: the
// directories and files are created by the first Update, and a version 1
// state file found there is migrated by the first use (see migrate). A nil
// logger discards.
func Open(dir string, logger *slog.Logger) *FileStore {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &FileStore{
		dir:    filepath.Clean(dir),
		logger: logger,
		writer: make(chan struct{}, 1),
	}
}

// Dir returns the state directory.
func (s *FileStore) Dir() string { return s.dir }

// Path returns the named server's state file.
func (s *FileStore) Path(server string) string { return s.files(server).path }

func (s *FileStore) serversDir() string { return filepath.Join(s.dir, ServersDir) }

func (s *FileStore) files(server string) serverFiles { return filesOf(s.serversDir(), server) }

// Load returns a consistent snapshot of the server's state, read under a
// shared lock. A missing file or directory is an empty state. A file that
// cannot be parsed yields a [*CorruptError]. Load honours ctx while waiting
// for a lock.
func (s *FileStore) Load(ctx context.Context, server string) (*Server, error) {
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	f := s.files(server)
	lock := flock.New(f.lock)
	if err := acquire(ctx, lock.TryRLock); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &Server{}, nil // no directory: nothing was ever written
		}
		return nil, fmt.Errorf("state: read lock %s: %w", lock.Path(), err)
	}
	defer s.unlock(lock)
	srv, _, err := s.read(f, server)
	return srv, err
}

// Update applies fn to the server's current state and saves the result,
// holding an exclusive lock across processes for the whole
// read-modify-write, so no concurrent update is lost. The write is
// crash-safe: the file is replaced atomically by a fully written and synced
// temporary file. A server whose state becomes empty has its file removed.
//
// If fn returns an error, nothing is written and Update returns that error
// unchanged. If the file on disk is corrupt, fn is not called, the file is
// left untouched and Update returns the [*CorruptError]. Update honours ctx
// while waiting for a lock; fn must not call Update on the same directory
// (it would wait for itself).
func (s *FileStore) Update(ctx context.Context, server string, fn func(*Server) error) error {
	f := s.files(server)
	select {
	case s.writer <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("state: waiting to update %s: %w", f.path, ctx.Err())
	}
	defer func() { <-s.writer }()

	if err := s.migrate(ctx); err != nil {
		return err
	}
	if err := os.MkdirAll(s.serversDir(), 0o700); err != nil {
		return fmt.Errorf("state: create directory: %w", err)
	}
	lock := flock.New(f.lock)
	if err := acquire(ctx, lock.TryLock); err != nil {
		return fmt.Errorf("state: lock %s: %w", lock.Path(), err)
	}
	defer s.unlock(lock)

	s.removeOrphans(f)
	srv, old, err := s.read(f, server)
	if err != nil {
		return err
	}
	if err := fn(srv); err != nil {
		return err
	}
	return s.save(f, server, srv, old)
}

// save writes srv as the server's state, whose file held old (nil if there
// was none). The caller holds the server's exclusive lock.
func (s *FileStore) save(f serverFiles, server string, srv *Server, old []byte) error {
	if srv.Empty() {
		if old == nil {
			return nil
		}
		if err := os.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("state: remove %s: %w", f.path, err)
		}
		s.logger.Debug("state: removed", "path", f.path)
		return nil
	}
	data, err := encode(server, srv)
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if old != nil && bytes.Equal(data, old) {
		return nil // unchanged: spare the disk and the watchers
	}
	if err := atomicfile.Write(f.path, data, 0o600, f.temp+"*"); err != nil {
		return fmt.Errorf("state: write %s: %w", f.path, err)
	}
	s.logger.Debug("state: saved", "path", f.path, "bytes", len(data))
	return nil
}

// Servers returns the names of the servers that have state, sorted. It
// reads only the head of each file, where the server's name is.
func (s *FileStore) Servers(ctx context.Context) ([]string, error) {
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(s.serversDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() || !stateFileName(e.Name()) {
			continue
		}
		path := filepath.Join(s.serversDir(), e.Name())
		name, err := readName(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed since the listing
		}
		if err != nil {
			return nil, &CorruptError{Path: path, Err: err}
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// readName returns the server name at the head of a state file.
func readName(path string) (string, error) {
	file, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer file.Close()
	dec := json.NewDecoder(bufio.NewReaderSize(file, 4096))
	var head struct{ Server string }
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", errors.New("invalid JSON: not an object")
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return "", fmt.Errorf("invalid JSON: %w", err)
		}
		if key == "server" {
			if err := dec.Decode(&head.Server); err != nil || head.Server == "" {
				return "", errors.New("no server name")
			}
			return head.Server, nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", fmt.Errorf("invalid JSON: %w", err)
		}
	}
	return "", errors.New("no server name")
}

// read returns the server's state on disk and the bytes it was decoded from
// (nil if there is no file). The caller holds the server's lock.
func (s *FileStore) read(f serverFiles, server string) (*Server, []byte, error) {
	data, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Server{}, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("state: read: %w", err)
	}
	srv, err := decode(data, server)
	if err != nil {
		return nil, nil, &CorruptError{Path: f.path, Server: server, Err: err}
	}
	return srv, data, nil
}

// removeOrphans deletes the server's temporary files left by writers that
// died before renaming them. Only a holder of the server's exclusive lock
// writes them, so while the caller holds it, every one of them is an orphan.
func (s *FileStore) removeOrphans(f serverFiles) {
	dir := filepath.Dir(f.path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), f.temp) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.logger.Warn("state: remove orphaned temporary file", "path", path, "err", err)
			continue
		}
		s.logger.Debug("state: removed orphaned temporary file", "path", path)
	}
}

func (s *FileStore) unlock(lock *flock.Flock) {
	if err := lock.Close(); err != nil {
		s.logger.Warn("state: unlock", "path", lock.Path(), "err", err)
	}
}

// acquire calls try until it takes the lock or fails, backing off between
// attempts, and gives up with ctx's error once ctx is done.
func acquire(ctx context.Context, try func() (bool, error)) error {
	delay := minLockDelay
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		ok, err := try()
		if err != nil || ok {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, maxLockDelay)
	}
}
