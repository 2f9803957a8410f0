package upstream

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/middleware"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// sseEvent is one dispatched server-sent event.
type sseEvent struct {
	name string // "message" when the stream gave none
	data []byte // data lines joined by "\n"; owned by the caller
}

// sseScanner reads server-sent events (the WHATWG event-stream format) with
// a bound on the size of one event, so a hostile or broken server cannot make
// mcpwrap buffer without limit.
//
// Lines end in "\n" or "\r\n"; a lone "\r" as line terminator is not
// supported (no MCP server emits it). An sseScanner is not safe for
// concurrent use.
type sseScanner struct {
	br  *bufio.Reader
	max int // bound on an event's data, in bytes

	// lastID is the stream's last event ID: the id in force when the last
	// event was dispatched (by its blank line), persisting across events.
	// It is what a reconnecting client sends as Last-Event-ID. An id line
	// of an event the stream cut short does not count: the server resumes
	// after Last-Event-ID, so that event would be lost.
	lastID string
	// pendingID is an id line's value not yet dispatched; hasPendingID
	// says whether there is one.
	pendingID    string
	hasPendingID bool
	// retry is the reconnection delay the server asked for, at most
	// maxSSERetry, or zero.
	retry time.Duration
	// events counts the events with data that next has returned, including
	// oversized ones: a stream that yields none made no progress.
	events int

	started bool   // the byte-order mark check is done
	line    []byte // holds a line that did not fit in br's buffer
}

// maxSSERetry caps a stream's retry field as Retry-After is capped: a
// server asking for 2^31-1 ms would otherwise park a request it has not
// answered for about 25 days before its stream is resumed.
const maxSSERetry = resilience.DefaultMaxRequestedDelay

// sseBufferBytes is the read buffer of a scanner; longer lines are assembled.
const sseBufferBytes = 64 << 10

func newSSEScanner(r io.Reader, maxEventBytes int) *sseScanner {
	if maxEventBytes <= 0 {
		maxEventBytes = middleware.DefaultMaxMessageBytes
	}
	br := sseReaders.Get().(*bufio.Reader)
	br.Reset(r)
	return &sseScanner{br: br, max: maxEventBytes}
}

// sseReaders keeps the read buffers of scanners released: each POST's
// answer stream is read with a scanner, and a new 64 KiB buffer for every
// call was two thirds of what the HTTP hop allocated.
var sseReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, sseBufferBytes) }}

// release gives the scanner's read buffer back for another scanner. The
// events it returned are the caller's and stay valid; s is not used again.
func (s *sseScanner) release() {
	s.br.Reset(nil)
	sseReaders.Put(s.br)
	s.br = nil
}

// next returns the next event that carries data. Events without data (such
// as the priming events of SEP-1699) only update lastID and retry.
//
// An event over the size limit yields a [*framing.LineTooLongError] holding
// the head of its data; it is skipped without being buffered whole and next
// may be called again. At the end of the stream next returns io.EOF (an
// unterminated last event is discarded, as the format requires); any other
// error is the reader's.
func (s *sseScanner) next() (sseEvent, error) {
	var (
		name     string
		data     []byte
		size     int64 // bytes of data seen, counting the "\n" separators
		oversize bool
		head     []byte
	)
	for {
		line, tooLong, err := s.readLine()
		if err != nil {
			return sseEvent{}, err
		}
		if len(line) == 0 && !tooLong {
			if s.hasPendingID {
				s.lastID, s.hasPendingID = s.pendingID, false
			}
			switch {
			case oversize:
				s.events++
				return sseEvent{}, &framing.LineTooLongError{Limit: s.max, Size: size - 1, Head: head}
			case size == 0:
				name = "" // an event without data is not dispatched
				continue
			}
			if name == "" {
				name = "message"
			}
			s.events++
			return sseEvent{name: name, data: data[:len(data)-1]}, nil
		}
		field, value := splitField(line)
		switch field {
		case "data":
			size += int64(len(value)) + 1
			if tooLong {
				size += s.skipRest()
			}
			switch {
			case oversize:
			case tooLong || size-1 > int64(s.max):
				oversize = true
				whole := append(data, value...)
				head = bytes.Clone(whole[:min(len(whole), framing.HeadBytes)])
				data = nil
			default:
				data = append(append(data, value...), '\n')
			}
			continue
		case "event":
			name = string(value)
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				s.pendingID, s.hasPendingID = string(value), true
			}
		case "retry":
			if ms, err := strconv.ParseUint(string(value), 10, 31); err == nil {
				s.retry = min(time.Duration(ms)*time.Millisecond, maxSSERetry)
			}
		}
		if tooLong {
			s.skipRest() // an unknown or absurd field: ignore the rest of it
		}
	}
}

// splitField splits "field: value" as the event-stream format does: the
// value starts after the first colon and one optional space. A line
// starting with a colon is a comment and yields an empty field name.
func splitField(line []byte) (field string, value []byte) {
	name, value, found := bytes.Cut(line, []byte{':'})
	if !found {
		return string(line), nil
	}
	value, _ = bytes.CutPrefix(value, []byte{' '})
	return string(name), value
}

// readLine returns the next line without its terminator. A line longer than
// the event limit comes back truncated with tooLong set, and the rest of it
// is left for [sseScanner.skipRest].
func (s *sseScanner) readLine() (line []byte, tooLong bool, err error) {
	if !s.started {
		s.started = true
		if bom, err := s.br.Peek(3); err == nil && string(bom) == "\uFEFF" {
			_, _ = s.br.Discard(3)
		}
	}
	s.line = s.line[:0]
	for {
		chunk, err := s.br.ReadSlice('\n')
		switch {
		case err == nil:
			chunk = chunk[:len(chunk)-1]
			if len(s.line) == 0 {
				return bytes.TrimSuffix(chunk, []byte{'\r'}), false, nil
			}
			s.line = append(s.line, chunk...)
			return bytes.TrimSuffix(s.line, []byte{'\r'}), false, nil
		case errors.Is(err, bufio.ErrBufferFull):
			s.line = append(s.line, chunk...)
			// Allow for the field name in front of the data.
			if len(s.line) > s.max+len("data: ") {
				return s.line, true, nil
			}
		case errors.Is(err, io.EOF):
			// An unterminated line cannot complete an event.
			return nil, false, io.EOF
		default:
			return nil, false, err
		}
	}
}

// skipRest discards the rest of the current line and returns how many bytes
// it had.
func (s *sseScanner) skipRest() int64 {
	var n int64
	for {
		chunk, err := s.br.ReadSlice('\n')
		n += int64(len(chunk))
		if !errors.Is(err, bufio.ErrBufferFull) {
			if err == nil {
				n-- // the newline
			}
			return n
		}
	}
}
