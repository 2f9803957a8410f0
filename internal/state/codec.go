package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Version is the version of the file format this package reads and writes.
const Version = 1

// ErrCorrupt is matched (errors.Is) by every [*CorruptError].
var ErrCorrupt = errors.New("state file is corrupt")

// ErrUnsupportedVersion is wrapped by a [*CorruptError] whose file has a
// missing or unknown version field, e.g. one written by a newer mcpwrap.
var ErrUnsupportedVersion = errors.New("unsupported state file version")

// CorruptError reports a state file that cannot be parsed: invalid JSON,
// unknown fields, or an unsupported version. The store never overwrites such
// a file, so the user's data is not lost; the user repairs or removes it.
type CorruptError struct {
	// Path is the state file.
	Path string
	// Err says what is wrong with it.
	Err error
}

// Error names the file, the problem and the fix.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("state file %s is unreadable: %v; mcpwrap will not modify it: "+
		"repair it by hand, or move it aside to start over (this forgets all tool toggles and approvals)",
		e.Path, e.Err)
}

// Unwrap returns the underlying problem.
func (e *CorruptError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrCorrupt) match.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// document is the on-disk form: the state plus its format version. Fields
// are declared in sorted key order.
type document struct {
	Servers map[string]*Server `json:"servers"`
	Version int                `json:"version"`
}

// decode parses a state file. It is strict, because whatever it accepts is
// later rewritten from the decoded value: an unknown field (a typo in a hand
// edit, or a newer format) would otherwise be silently dropped.
func decode(data []byte) (*State, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var doc document
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("invalid JSON: unexpected data after the top-level object")
	}
	if doc.Version != Version {
		return nil, fmt.Errorf("%w %d (this mcpwrap reads version %d)", ErrUnsupportedVersion, doc.Version, Version)
	}
	s := &State{Servers: doc.Servers}
	s.normalize()
	return s, nil
}

// encode renders s as a state file: indented JSON, sorted keys, no HTML
// escaping (it is for humans), trailing newline. It normalizes s first.
func encode(s *State) ([]byte, error) {
	s.normalize()
	doc := document{Servers: s.Servers, Version: Version}
	if doc.Servers == nil {
		doc.Servers = map[string]*Server{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encode state: %w", err)
	}
	return buf.Bytes(), nil
}
