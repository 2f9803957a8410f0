package state

import (
	"github.com/mcpwrap/mcpwrap/internal/atomicfile"

	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/gofrs/flock"
)

const (
	// FileName is the name of the state file inside the state directory.
	FileName = "state.json"
	// LockFileName is the name of the lock file next to it. The state file
	// itself cannot carry the lock: every write replaces it with a new inode.
	LockFileName = FileName + ".lock"

	// tempPrefix starts the names of the temporary files writes go through.
	tempPrefix = FileName + ".tmp-"

	// Waiting for a lock held by another process polls, because flock has no
	// cancellable blocking wait; the delay doubles between these bounds.
	minLockDelay = time.Millisecond
	maxLockDelay = 20 * time.Millisecond
)

// Store is the state store in one directory. It is safe for concurrent use
// by multiple goroutines, and by multiple processes sharing the directory,
// each with its own Store.
type Store struct {
	dir    string
	logger *slog.Logger
	// writer is held by this process's goroutine inside Update, so that the
	// others queue here cheaply instead of polling the file lock.
	writer chan struct{}
	watch  watchConfig
}

// Open returns the store kept in dir. It does not touch the disk: the
// directory and its files are created by the first Update. A nil logger
// discards.
func Open(dir string, logger *slog.Logger) *Store {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Store{
		dir:    filepath.Clean(dir),
		logger: logger,
		writer: make(chan struct{}, 1),
		watch:  defaultWatchConfig(),
	}
}

// Dir returns the state directory.
func (s *Store) Dir() string { return s.dir }

// Path returns the state file.
func (s *Store) Path() string { return filepath.Join(s.dir, FileName) }

func (s *Store) lockPath() string { return filepath.Join(s.dir, LockFileName) }

// Load returns a consistent snapshot of the state, read under a shared lock.
// A missing file or directory is an empty state. A file that cannot be
// parsed yields a [*CorruptError]. Load honours ctx while waiting for the
// lock.
func (s *Store) Load(ctx context.Context) (*State, error) {
	lock := flock.New(s.lockPath())
	if err := acquire(ctx, lock.TryRLock); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return &State{}, nil // no directory: nothing was ever written
		}
		return nil, fmt.Errorf("state: read lock %s: %w", lock.Path(), err)
	}
	defer s.unlock(lock)
	st, _, err := s.read()
	return st, err
}

// Update applies fn to the current state and saves the result, holding an
// exclusive lock across processes for the whole read-modify-write, so no
// concurrent update is lost. The write is crash-safe: the file is replaced
// atomically by a fully written and synced temporary file.
//
// If fn returns an error, nothing is written and Update returns that error
// unchanged. If the file on disk is corrupt, fn is not called, the file is
// left untouched and Update returns the [*CorruptError]. Update honours ctx
// while waiting for the lock; fn must not call Update on the same directory
// (it would wait for itself).
func (s *Store) Update(ctx context.Context, fn func(*State) error) error {
	select {
	case s.writer <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("state: waiting to update %s: %w", s.Path(), ctx.Err())
	}
	defer func() { <-s.writer }()

	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("state: create directory: %w", err)
	}
	lock := flock.New(s.lockPath())
	if err := acquire(ctx, lock.TryLock); err != nil {
		return fmt.Errorf("state: lock %s: %w", lock.Path(), err)
	}
	defer s.unlock(lock)

	s.removeOrphans()
	st, old, err := s.read()
	if err != nil {
		return err
	}
	if err := fn(st); err != nil {
		return err
	}
	data, err := encode(st)
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if old != nil && bytes.Equal(data, old) {
		return nil // unchanged: spare the disk and the watchers
	}
	return s.replace(data)
}

// read returns the state on disk and the bytes it was decoded from (nil if
// there is no file). The caller holds the lock.
func (s *Store) read() (*State, []byte, error) {
	data, err := os.ReadFile(s.Path())
	if errors.Is(err, fs.ErrNotExist) {
		return &State{}, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("state: read: %w", err)
	}
	st, err := decode(data)
	if err != nil {
		return nil, nil, &CorruptError{Path: s.Path(), Err: err}
	}
	return st, data, nil
}

// replace atomically replaces the state file with data. The caller holds the
// exclusive lock.
func (s *Store) replace(data []byte) error {
	if err := atomicfile.Write(s.Path(), data, 0o600, tempPrefix+"*"); err != nil {
		return fmt.Errorf("state: write %s: %w", s.Path(), err)
	}
	s.logger.Debug("state: saved", "path", s.Path(), "bytes", len(data))
	return nil
}

// removeOrphans deletes temporary files left by writers that died before
// renaming them. Only a holder of the exclusive lock writes temporary files,
// so while the caller holds it, every one of them is an orphan.
func (s *Store) removeOrphans() {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		path := filepath.Join(s.dir, e.Name())
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.logger.Warn("state: remove orphaned temporary file", "path", path, "err", err)
			continue
		}
		s.logger.Debug("state: removed orphaned temporary file", "path", path)
	}
}

func (s *Store) unlock(lock *flock.Flock) {
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

// watchConfig holds Watch's timings and seams; tests shorten and replace them.
type watchConfig struct {
	// debounce is the quiet period after a change before onChange is called.
	debounce time.Duration
	// maxDelay caps the wait for a quiet period under a stream of changes.
	maxDelay time.Duration
	// pollInterval is the cadence of the fallback when notifications fail.
	pollInterval time.Duration
	newWatcher   func() (*fsnotify.Watcher, error)
	// ready, if set, is called once Watch observes the file ("notify" or
	// "poll"); a change made after that is reported.
	ready func(mode string)
}

func defaultWatchConfig() watchConfig {
	return watchConfig{
		debounce:     100 * time.Millisecond,
		maxDelay:     time.Second,
		pollInterval: time.Second,
		newWatcher:   fsnotify.NewWatcher,
	}
}
