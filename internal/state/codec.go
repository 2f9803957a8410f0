package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Version is the version of the per-server file format this package reads
// and writes. Version 1 was one file for every server (see migrate.go).
const Version = 2

// ErrCorrupt is matched (errors.Is) by every [*CorruptError].
var ErrCorrupt = errors.New("state file is corrupt")

// ErrUnavailable is matched (errors.Is) by the errors of a store that
// cannot be reached for now, such as a database that is down, as opposed to
// one whose contents are wrong. A user of the store that loaded a server's
// state before may keep using it while the store is unavailable (the gate
// does), and must look again once the store's Watch calls back.
var ErrUnavailable = errors.New("state store unavailable")

// ErrUnsupportedVersion is wrapped by a [*CorruptError] whose file has a
// missing or unknown version field, e.g. one written by a newer mcpwrap.
var ErrUnsupportedVersion = errors.New("unsupported state file version")

// CorruptError reports a stored state document that cannot be parsed:
// invalid JSON, unknown fields, or an unsupported version. The store never
// overwrites such a document, so the user's data is not lost; the user
// repairs or removes it.
type CorruptError struct {
	// Path is the state file, or "" for a store that keeps no files.
	Path string
	// Where names the document when Path is "", in words a user can find
	// it by, such as `row "github" of table mcpwrap_state in
	// postgres://db:5432`; it holds no secret.
	Where string
	// Server is the server whose state the file holds, or "" for the
	// version 1 file that held every server's.
	Server string
	// Err says what is wrong with it.
	Err error
}

// Error names the file, the problem and the fix.
func (e *CorruptError) Error() string {
	forgets := "all tool toggles and approvals"
	if e.Server != "" {
		forgets = fmt.Sprintf("the tool toggles and approvals of server %q", e.Server)
	}
	if e.Path == "" {
		return fmt.Sprintf("the stored state %s is unreadable: %v; mcpwrap will not modify it: "+
			"repair it, or delete it to start over (this forgets %s)", e.Where, e.Err, forgets)
	}
	return fmt.Sprintf("state file %s is unreadable: %v; mcpwrap will not modify it: "+
		"repair it by hand, or move it aside to start over (this forgets %s)",
		e.Path, e.Err, forgets)
}

// Unwrap returns the underlying problem.
func (e *CorruptError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrCorrupt) match.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// document is the on-disk form of one server's state: whose it is and the
// format version first, then the state, its keys sorted. An approval whose
// definition the catalog holds under the tool's name is kept without it.
type document struct {
	Server    string              `json:"server"`
	Version   int                 `json:"version"`
	Approvals map[string]Approval `json:"approvals,omitempty"`
	Catalog   *Catalog            `json:"catalog,omitempty"`
	Disabled  []string            `json:"disabled,omitempty"`
}

// decodeStrict parses data into v, refusing unknown fields and trailing
// data: whatever it accepts is later rewritten from the decoded value, so an
// unknown field (a typo in a hand edit, or a newer format) would otherwise
// be silently dropped.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("invalid JSON: unexpected data after the top-level object")
	}
	return nil
}

// Marshal renders the named server's state as the document every store
// keeps: the state file's contents (see encode). It normalizes srv first,
// and does not otherwise modify it.
func Marshal(server string, srv *Server) ([]byte, error) { return encode(server, srv) }

// Unmarshal parses a document written by [Marshal] for the named server. Its
// error says what is wrong; a store reports it as a [*CorruptError].
func Unmarshal(data []byte, server string) (*Server, error) { return decode(data, server) }

// decode parses the state file of the named server. An approval kept
// without its definition gets the catalog's, when the catalog's has the
// approved hash.
func decode(data []byte, server string) (*Server, error) {
	var doc document
	if err := decodeStrict(data, &doc); err != nil {
		return nil, err
	}
	if doc.Version != Version {
		return nil, fmt.Errorf("%w %d (this mcpwrap reads version %d)", ErrUnsupportedVersion, doc.Version, Version)
	}
	if doc.Server != server {
		return nil, fmt.Errorf("it holds the state of server %q, not of %q", doc.Server, server)
	}
	srv := &Server{Approvals: doc.Approvals, Catalog: doc.Catalog, Disabled: doc.Disabled}
	for name, a := range srv.Approvals {
		if a.Definition != nil || srv.Catalog == nil {
			continue
		}
		if t, ok := srv.Catalog.Tools[name]; ok && t.Hash == a.Hash {
			a.Definition = t.Definition
			srv.Approvals[name] = a
		}
	}
	srv.normalize()
	return srv, nil
}

// encode renders the named server's state as its file: indented JSON, sorted
// keys, no HTML escaping (it is for humans), trailing newline. It normalizes
// srv first, and does not otherwise modify it.
func encode(server string, srv *Server) ([]byte, error) {
	srv.normalize()
	doc := document{Server: server, Version: Version, Approvals: srv.Approvals, Catalog: srv.Catalog, Disabled: srv.Disabled}
	if srv.Catalog != nil && len(srv.Approvals) > 0 {
		doc.Approvals = make(map[string]Approval, len(srv.Approvals))
		for name, a := range srv.Approvals {
			if t, ok := srv.Catalog.Tools[name]; ok && t.Hash == a.Hash && sameJSON(t.Definition, a.Definition) {
				a.Definition = nil // one copy: decode takes it from the catalog
			}
			doc.Approvals[name] = a
		}
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

// sameJSON reports whether a and b are the same JSON text but for
// insignificant whitespace (the file re-indents the definitions it keeps).
func sameJSON(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	var ca, cb bytes.Buffer
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
}
