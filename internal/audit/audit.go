// Package audit appends mcpwrap's decisions to a file of JSON lines that
// every sidecar and `mcpwrap tools` of a user may share: one line per tool
// call (its verdict, status, outcome and duration, and a hash of its
// arguments, never the arguments), per toggle or approval, per sign-in,
// each with who made it. The line schema is [Record]; its version is
// [Version] (see README, "Audit log").
//
// Several processes append to one file at once without losing or
// interleaving lines: the file is opened O_APPEND and each line is one
// write(2) of at most [MaxLineBytes], which the kernel appends whole. The
// file is rotated past [Log.MaxBytes] under a lock file beside it, so that
// one process rotates and the others reopen; a line written to a file that
// another process has just rotated lands in the first backup.
package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gofrs/flock"

	"github.com/mcpwrap/mcpwrap/internal/redact"
)

// Version is the version of the line schema, each line's "v". A reader
// must ignore members it does not know; a change that removes or redefines
// one increases it.
const Version = 1

// Defaults of a [Log]'s rotation.
const (
	// DefaultMaxBytes is the size past which the file is rotated.
	DefaultMaxBytes = 64 << 20
	// DefaultBackups is how many rotated files are kept (FILE.1 newest).
	DefaultBackups = 3
)

// MaxLineBytes bounds one line, newline included: a longer record has its
// free-text members shortened to fit.
const MaxLineBytes = 4096

// Events, each line's "event".
const (
	EventCall    = "call"    // a tools/call the client sent, answered
	EventToggle  = "toggle"  // `mcpwrap tools enable|disable`
	EventApprove = "approve" // `mcpwrap tools approve`
	EventSignIn  = "sign_in" // an OAuth sign-in to a remote server
)

// Verdicts of a call.
const (
	VerdictAllowed  = "allowed"  // relayed to the server
	VerdictRejected = "rejected" // answered by mcpwrap with a status: a locked tool, or the server not available
	VerdictAnswered = "answered" // answered by mcpwrap itself without a status (the discovery tool)
)

// A Record is one line. Members that do not apply are left out.
type Record struct {
	V     int       `json:"v"`    // [Version]; set by Write
	Time  time.Time `json:"time"` // set by Write when zero
	Event string    `json:"event"`
	// Server is the server's --name; Tool the tool's name.
	Server string `json:"server,omitempty"`
	Tool   string `json:"tool,omitempty"`
	// Verdict is VerdictAllowed or VerdictRejected; Status the status
	// mcpwrap answered a rejected call with (disabled_by_user, ...).
	Verdict string `json:"verdict,omitempty"`
	Status  string `json:"status,omitempty"`
	// Outcome is how the call ended: "ok", "tool_error" (isError), "error"
	// (a JSON-RPC error, Code its code) or "cancelled"; Class is
	// resilience's class of a status answer (permanent, transient, denied).
	Outcome    string  `json:"outcome,omitempty"`
	Code       int     `json:"code,omitempty"`
	Class      string  `json:"class,omitempty"`
	DurationMS float64 `json:"duration_ms,omitempty"`
	// ArgsSHA256 is the hex SHA-256 of the call's arguments as sent (see
	// [HashArgs]): equal arguments hash alike; the arguments are not kept.
	ArgsSHA256 string `json:"args_sha256,omitempty"`
	// Action is what a toggle did ("enable", "disable"), or how a
	// sign-in ended ("ok", "failed"); Detail says more, redacted.
	Action string `json:"action,omitempty"`
	Detail string `json:"detail,omitempty"`
	// By is who made the decision; set by Write.
	By Actor `json:"by"`
}

// An Actor is the process that wrote a line and the user it ran as.
type Actor struct {
	PID     int    `json:"pid"`
	Program string `json:"program"` // "mcpwrap", or "mcpwrap tools"
	User    string `json:"user,omitempty"`
	UID     string `json:"uid,omitempty"`
}

// HashArgs returns the hex SHA-256 of a call's raw arguments; "" for none.
func HashArgs(args []byte) string {
	if len(args) == 0 {
		return ""
	}
	sum := sha256.Sum256(args)
	return hex.EncodeToString(sum[:])
}

// A Log appends records to one file. A nil *Log writes nothing, so a
// caller with no audit log configured holds nil and pays nothing.
//
// Set its fields before the first Write; Write and Close are safe for
// concurrent use.
type Log struct {
	// MaxBytes is the size past which the file is rotated; zero means
	// [DefaultMaxBytes].
	MaxBytes int64
	// Backups is how many rotated files are kept; zero means
	// [DefaultBackups].
	Backups int
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	path  string
	actor Actor

	mu sync.Mutex
	f  *os.File
}

// Open opens (creating it, 0600) the file at path for appending records
// written by program.
func Open(path, program string) (*Log, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	f, err := openFile(path)
	if err != nil {
		return nil, err
	}
	a := Actor{PID: os.Getpid(), Program: program}
	if u, err := user.Current(); err == nil {
		a.User, a.UID = u.Username, u.Uid
	} else {
		a.UID = strconv.Itoa(os.Getuid())
	}
	return &Log{path: path, f: f, actor: a}, nil
}

func openFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	return f, nil
}

// Write appends r as one line, then rotates the file when it is full.
func (l *Log) Write(r Record) error {
	if l == nil {
		return nil
	}
	r.V = Version
	if r.Time.IsZero() {
		if l.Now != nil {
			r.Time = l.Now()
		} else {
			r.Time = time.Now()
		}
	}
	r.By = l.actor
	r.Detail = redact.Text(r.Detail)
	line, err := encode(r)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return os.ErrClosed
	}
	if _, err := l.f.Write(line); err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	return l.rotateIfFull()
}

// encode marshals r as one line of at most MaxLineBytes, shortening its
// free-text members when it is longer.
func encode(r Record) ([]byte, error) {
	for range 2 {
		b, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("audit log: %w", err)
		}
		if len(b) < MaxLineBytes {
			return append(b, '\n'), nil
		}
		// Only these hold text of arbitrary length; each keeps a quarter.
		r.Detail = shorten(r.Detail, MaxLineBytes/4)
		r.Tool = shorten(r.Tool, MaxLineBytes/4)
		r.Server = shorten(r.Server, MaxLineBytes/4)
		r.Status = shorten(r.Status, 64)
	}
	return nil, errors.New("audit log: record too long")
}

// shorten cuts s to at most n bytes (escaped, a byte may take six) on a
// rune boundary, marking the cut.
func shorten(s string, n int) string {
	n /= 6
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// rotateIfFull rotates the file once it has reached MaxBytes, or reopens
// the path when another process has rotated it. l.mu is held.
func (l *Log) rotateIfFull() error {
	fi, err := l.f.Stat()
	if err != nil || fi.Size() < l.maxBytes() {
		return nil
	}
	lock := flock.New(l.path + ".lock")
	if err := lock.Lock(); err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	defer lock.Unlock()
	// Under the lock: only the process that finds the path still naming
	// the full file rotates it; the others find a new file and reopen.
	if cur, err := os.Stat(l.path); err == nil && os.SameFile(cur, fi) {
		backups := l.Backups
		if backups <= 0 {
			backups = DefaultBackups
		}
		for i := backups - 1; i >= 1; i-- {
			_ = os.Rename(backup(l.path, i), backup(l.path, i+1))
		}
		if err := os.Rename(l.path, backup(l.path, 1)); err != nil {
			return fmt.Errorf("audit log: %w", err)
		}
	}
	f, err := openFile(l.path)
	if err != nil {
		return err
	}
	l.f.Close()
	l.f = f
	return nil
}

func backup(path string, i int) string { return path + "." + strconv.Itoa(i) }

func (l *Log) maxBytes() int64 {
	if l.MaxBytes > 0 {
		return l.MaxBytes
	}
	return DefaultMaxBytes
}

// Close closes the file; later writes fail.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
