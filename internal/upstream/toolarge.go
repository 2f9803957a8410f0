package upstream

import (
	"errors"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/middleware"
)

// tooLarge turns the framing reader's report of a dropped message into the
// relay's, which every Conn returns so that any Conn's callers can match
// [middleware.ErrMessageTooLarge]; the reader's error stays underneath.
// Other errors, nil included, are returned as they are.
func tooLarge(err error) error {
	if e, ok := errors.AsType[*framing.LineTooLongError](err); ok {
		return &middleware.MessageTooLargeError{Size: e.Size, Limit: e.Limit, ID: e.ID, Method: e.Method, Err: e}
	}
	return err
}
