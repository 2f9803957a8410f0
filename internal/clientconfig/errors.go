package clientconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

var (
	// ErrUnknownClient is returned by [Locations] for a client it does not know.
	ErrUnknownClient = errors.New("unknown client")
	// ErrMcpwrapPath is returned by [Install] when [Options.Mcpwrap] is not an
	// absolute path: GUI clients start servers with a minimal PATH.
	ErrMcpwrapPath = errors.New("the mcpwrap path must be absolute")
	// ErrChanged is returned by [WriteWithBackup] when the file no longer
	// holds what was read from it: someone else wrote it in between.
	ErrChanged = errors.New("the file changed since it was read")
)

// ParseError reports a config file that is not valid JSON, or whose
// mcpServers are not shaped as clients expect. Line and Column are 1-based;
// Column counts bytes.
type ParseError struct {
	Line, Column int
	Msg          string
	Err          error // the underlying *json.SyntaxError, if any
}

// Error states the position and the problem; callers prefix the file name.
func (e *ParseError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// Unwrap returns the underlying error, if any.
func (e *ParseError) Unwrap() error { return e.Err }

// parseErrorAt returns a ParseError for the byte at data[offset].
func parseErrorAt(data []byte, offset int, msg string, err error) *ParseError {
	offset = min(offset, len(data))
	lineStart := bytes.LastIndexByte(data[:offset], '\n') + 1
	return &ParseError{
		Line:   bytes.Count(data[:offset], []byte("\n")) + 1,
		Column: offset - lineStart + 1,
		Msg:    msg,
		Err:    err,
	}
}

// validate checks that data is one valid JSON value.
func validate(data []byte) error {
	var v json.RawMessage
	err := json.Unmarshal(data, &v)
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		// Offset counts the bytes read, the offending one included.
		return parseErrorAt(data, max(int(syntax.Offset)-1, 0), syntax.Error(), err)
	}
	return err
}
