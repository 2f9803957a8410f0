package clientconfig

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// LockSuffix names the lock beside a client config file: FILE.lock, a
// directory while someone holds it. Claude Code takes it (with the
// proper-lockfile package) around its saves of ~/.claude.json, and re-reads
// the file once it holds it. [WriteWithBackup] takes it the same way
// around its last check of the file and the rename, so that a client that
// honours it never saves in between, and neither does another mcpwrap.
const LockSuffix = ".lock"

const (
	// staleLock is the age past which a lock is a crashed holder's and is
	// taken over, as proper-lockfile does (a live holder refreshes it).
	staleLock = 10 * time.Second
	// maxLockWait bounds the wait for a lock that stays fresh.
	maxLockWait = 30 * time.Second
	// Waiting polls, doubling the delay between these bounds: a directory
	// lock has no blocking wait.
	minLockDelay = time.Millisecond
	maxLockDelay = 50 * time.Millisecond
)

// ErrLocked is returned by [WriteWithBackup] when another program holds the
// file's lock for longer than it waits.
var ErrLocked = errors.New("another program holds the file's lock")

// lock takes the lock of the file at path (already free of symbolic links,
// as proper-lockfile resolves them) and returns its release. When another
// holds it, lock calls waiting (unless nil) once with the lock's path and
// waits, until ctx ends or maxLockWait passes.
func lock(ctx context.Context, path string, waiting func(lockPath string)) (release func(), err error) {
	name := path + LockSuffix
	ctx, cancel := context.WithTimeout(ctx, maxLockWait)
	defer cancel()
	delay, told := minLockDelay, false
	for {
		err := os.Mkdir(name, 0o700)
		if err == nil {
			return func() { _ = os.Remove(name) }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("lock: %w", err)
		}
		info, err := os.Stat(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // released meanwhile
		}
		if err == nil && time.Since(info.ModTime()) > staleLock {
			if err := os.Remove(name); err == nil || errors.Is(err, fs.ErrNotExist) {
				continue // a crashed holder's: taken over, as proper-lockfile does
			}
		}
		if !told && waiting != nil {
			waiting(name)
			told = true
		}
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("%w (%s; remove it if no client is running): %w", ErrLocked, name, context.Cause(ctx))
		case <-timer.C:
		}
		delay = min(2*delay, maxLockDelay)
	}
}
