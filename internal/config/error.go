package config

import (
	"errors"
	"strconv"
	"strings"
)

// ErrInvalid is matched (errors.Is) by every error Load and Parse return.
var ErrInvalid = errors.New("invalid config")

// Error says why a config file cannot be used and where, as
// "config.json:7:9: unknown key \"servers.filesystem.tool\"".
type Error struct {
	// File is the config file's path, as given to Load or Parse.
	File string
	// Line and Column locate the problem, both 1-based (Column counts
	// characters); 0 when it has no position, as for an unreadable file.
	Line, Column int
	// Key is the dotted key path the problem is about ("" for none).
	Key string
	// Msg describes the problem, without the location.
	Msg string
	// Err is the underlying cause, if any (an *fs.PathError, a
	// *json.SyntaxError, or an error matching policy.ErrInvalid).
	Err error
}

// Error returns "FILE[:LINE:COLUMN]: MSG".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line) + ":" + strconv.Itoa(e.Column))
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }
