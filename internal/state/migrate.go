package state

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/gofrs/flock"

	"github.com/mcpwrap/mcpwrap/internal/atomicfile"
)

// Version 1 kept every server's state in one file, state.json, in the state
// directory: a sidecar re-read every server's catalog whenever any server's
// state changed, and each approval held a second copy of its definition.
// The first use of a store migrates such a file: each server's state is
// written to its own file (approvals keeping one copy of their definitions),
// the file is kept as LegacyBackupName, and state.json is replaced by a
// small marker that this mcpwrap skips and an older mcpwrap still running
// refuses as unreadable, so that it fails closed instead of starting from
// an empty state. A state.json that cannot be parsed is never migrated: every
// use of the store fails with its [*CorruptError], as before, until the user
// repairs or moves it.
const (
	// LegacyFileName is the version 1 state file, holding every server.
	LegacyFileName = "state.json"
	// LegacyBackupName is what a migrated version 1 file is kept as.
	LegacyBackupName = LegacyFileName + ".v1"

	legacyVersion = 1
	legacyLock    = LegacyFileName + ".lock"
	legacyTemp    = "." + LegacyFileName + ".tmp-"
)

// legacyDocument is the version 1 file.
type legacyDocument struct {
	Servers map[string]*Server `json:"servers"`
	Version int                `json:"version"`
}

// marker is what replaces a migrated version 1 file.
type marker struct {
	Migrated string `json:"migrated"` // where the state went: ServersDir
	Version  int    `json:"version"`
}

func (s *FileStore) legacyPath() string { return filepath.Join(s.dir, LegacyFileName) }

// migrate migrates a version 1 state file, if there is one (see above). It
// costs one small read once migrated, or when there was never one.
func (s *FileStore) migrate(ctx context.Context) error {
	if done, err := s.migrated(); done || err != nil {
		return err
	}
	lock := flock.New(filepath.Join(s.dir, legacyLock))
	if err := acquire(ctx, lock.TryLock); err != nil {
		return fmt.Errorf("state: lock %s: %w", lock.Path(), err)
	}
	defer s.unlock(lock)
	done, err := s.migrated() // another process may have migrated it meanwhile
	if done || err != nil {
		return err
	}
	path := s.legacyPath()
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("state: read: %w", err)
	}
	doc, err := decodeLegacy(data)
	if err != nil {
		return &CorruptError{Path: path, Err: err}
	}
	if err := os.MkdirAll(s.serversDir(), 0o700); err != nil {
		return fmt.Errorf("state: create directory: %w", err)
	}
	n := 0
	for name, srv := range doc.Servers {
		if srv == nil || srv.Empty() {
			continue
		}
		if err := s.migrateServer(ctx, name, srv); err != nil {
			return err
		}
		n++
	}
	backup := filepath.Join(s.dir, LegacyBackupName)
	_ = os.Remove(backup) // from an earlier migration the user undid
	if err := os.Link(path, backup); err != nil {
		s.logger.Warn("state: cannot keep the version 1 state file as a backup", "path", backup, "err", err)
		backup = ""
	}
	if err := atomicfile.Write(path, markerFile, 0o600, legacyTemp+"*"); err != nil {
		return fmt.Errorf("state: write %s: %w", path, err)
	}
	s.logger.Info("state: moved every server's state to a file of its own", "servers", n,
		"dir", s.serversDir(), "backup", backup)
	return nil
}

// migrated reports whether there is no version 1 state file to migrate:
// none at all, or the marker a migration left.
func (s *FileStore) migrated() (bool, error) {
	data, err := os.ReadFile(s.legacyPath())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("state: read: %w", err)
	}
	var m marker
	return decodeStrict(data, &m) == nil && m.Version == Version && m.Migrated == ServersDir, nil
}

// migrateServer writes one server's migrated state, unless its file exists:
// a migration that stopped midway wrote it already, and the file may have
// changed since.
func (s *FileStore) migrateServer(ctx context.Context, name string, srv *Server) error {
	f := s.files(name)
	lock := flock.New(f.lock)
	if err := acquire(ctx, lock.TryLock); err != nil {
		return fmt.Errorf("state: lock %s: %w", lock.Path(), err)
	}
	defer s.unlock(lock)
	if _, err := os.Stat(f.path); err == nil {
		return nil
	}
	return s.save(f, name, srv, nil)
}

// decodeLegacy parses a version 1 state file.
func decodeLegacy(data []byte) (*legacyDocument, error) {
	var doc legacyDocument
	if err := decodeStrict(data, &doc); err != nil {
		return nil, err
	}
	if doc.Version != legacyVersion {
		return nil, fmt.Errorf("%w %d (this mcpwrap reads version %d here, and migrates it to one file per server)",
			ErrUnsupportedVersion, doc.Version, legacyVersion)
	}
	return &doc, nil
}

// markerFile is the marker, as written.
var markerFile = []byte(fmt.Sprintf("{\n  \"migrated\": %q,\n  \"version\": %d\n}\n", ServersDir, Version))
