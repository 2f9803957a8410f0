package framing

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// This file tests relaying a long line in parts: Reader.ReadHead and
// ReadPart, Writer.WriteParts, and PeekHead.

// readParts reads r to its end with ReadHead, taking each long line with
// ReadPart when parts is set and with Read when not. It returns the lines
// and how many were read in parts.
func readParts(t *testing.T, r *Reader, parts bool) (got []string, inParts int) {
	t.Helper()
	for {
		head, whole, err := r.ReadHead()
		if errors.Is(err, io.EOF) {
			return got, inParts
		}
		require.NoError(t, err)
		head = bytes.Clone(head)
		switch {
		case whole:
			got = append(got, string(head))
		case parts:
			var line []byte
			for {
				part, last, err := r.ReadPart()
				if !errors.Is(err, io.EOF) { // the last line may lack its newline
					require.NoError(t, err)
				}
				line = append(line, part...)
				if last {
					break
				}
			}
			assert.True(t, bytes.HasPrefix(line, head), "the parts start with the head")
			got = append(got, string(line))
			inParts++
		default:
			line, err := r.Read()
			if errors.Is(err, io.EOF) { // the head was of a blank line, which Read skips
				return got, inParts
			}
			require.NoError(t, err)
			require.LessOrEqual(t, len(line), r.max, "read whole, a line is bound by the limit")
			require.True(t, bytes.HasPrefix(line, head), "the whole line starts with the head")
			got = append(got, string(line))
		}
	}
}

func TestReadHeadHandsOverALongLineInParts(t *testing.T) {
	long := strings.Repeat("x", 5*minBuffer)
	tests := []struct {
		name  string
		input string
		max   int
		parts bool
		want  []string
		// wantInParts counts the lines handed over in parts.
		wantInParts int
	}{
		{name: "short lines come whole", input: "a\n\n  \nb\n", parts: true, want: []string{"a", "b"}},
		{name: "a long line in parts", input: "a\n" + long + "\nb\n", parts: true, want: []string{"a", long, "b"}, wantInParts: 1},
		{name: "a long line in parts is bound by no limit", input: long + "\nb\n", max: 1024, parts: true, want: []string{long, "b"}, wantInParts: 1},
		{name: "a line over the limit comes in parts", input: strings.Repeat("y", 2000) + "\nb\n", max: 1024, parts: true, want: []string{strings.Repeat("y", 2000), "b"}, wantInParts: 1},
		{name: "a long line read whole after its head", input: "a\n" + long + "\nb\n", want: []string{"a", long, "b"}},
		{name: "the last line without a newline", input: "a\n" + long, parts: true, want: []string{"a", long}, wantInParts: 1},
		{name: "one byte at a time", input: long + "\n" + long + "\n", parts: true, want: []string{long, long}, wantInParts: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var src io.Reader = strings.NewReader(tt.input)
			if strings.HasPrefix(tt.name, "one byte") {
				src = iotest.OneByteReader(src)
			}
			r := NewReader(src, tt.max)
			got, inParts := readParts(t, r, tt.parts)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantInParts, inParts)
			assert.LessOrEqual(t, len(r.buf), minBuffer, "a line relayed in parts needs no more than the usual buffer")
		})
	}
}

func TestReadHeadOfALineTooLongToReadWhole(t *testing.T) {
	long := strings.Repeat("x", 2*minBuffer)
	r := NewReader(strings.NewReader(long+"\nafter\n"), 1024)
	_, whole, err := r.ReadHead()
	require.NoError(t, err)
	require.False(t, whole)
	_, err = r.Read()
	require.ErrorIs(t, err, ErrLineTooLong, "read whole, it is bound by the limit")
	line, err := r.Read()
	require.NoError(t, err)
	assert.Equal(t, "after", string(line))
}

func TestReadPartReportsALineCutOff(t *testing.T) {
	long := strings.Repeat("x", 2*minBuffer)
	broken := errors.New("pipe broke")
	r := NewReader(io.MultiReader(strings.NewReader(long), iotest.ErrReader(broken)), 0)
	_, whole, err := r.ReadHead()
	require.NoError(t, err)
	require.False(t, whole)
	var got []byte
	for {
		part, last, err := r.ReadPart()
		got = append(got, part...)
		if err != nil {
			assert.True(t, last, "an error ends the line")
			assert.ErrorIs(t, err, broken)
			break
		}
		require.False(t, last, "no newline came")
	}
	assert.Equal(t, long, string(got))
	_, _, err = r.ReadHead()
	assert.ErrorIs(t, err, broken, "the error ends the stream")
}

// FuzzReadParts checks that reading lines with ReadHead, taking each long
// one in parts or whole, neither loses nor invents bytes.
func FuzzReadParts(f *testing.F) {
	f.Add([]byte("{\"id\":1}\n\nxyz"), uint8(3), false)
	f.Add([]byte("a"), uint8(200), true)
	f.Fuzz(func(t *testing.T, data []byte, repeat uint8, parts bool) {
		if len(data) == 0 {
			return
		}
		// Long enough for long lines whatever the input's newlines.
		stream := bytes.Repeat(data, 1+int(repeat)*(2*minBuffer/len(data))/255)
		var want []string
		for _, l := range bytes.Split(stream, []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 {
				want = append(want, string(l))
			}
		}
		var got []string
		r := NewReader(bytes.NewReader(stream), 0)
		lines, _ := readParts(t, r, parts)
		for _, l := range lines {
			// A long blank line is skipped when read whole, relayed when in parts.
			if len(strings.TrimSpace(l)) > 0 {
				got = append(got, l)
			}
		}
		assert.Equal(t, len(want), len(got))
		assert.Equal(t, strings.Join(want, "\n"), strings.Join(got, "\n"))
	})
}

// failingWriter fails every write after its first n bytes.
type failingWriter struct {
	bytes.Buffer
	n int
}

var errWrite = errors.New("write failed")

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.Len()+len(p) > w.n {
		return 0, errWrite
	}
	return w.Buffer.Write(p)
}

func TestLineStream(t *testing.T) {
	tests := []struct {
		name     string
		parts    []string
		endAfter int // End is called (as by a watchdog) after this many parts; 0 for never
		limit    int // of the destination; 0 for none
		want     string
		wantErrs []error // of each Write
		wantEnd  error
	}{
		{name: "parts then newline, after the held line", parts: []string{"ab", "", "cd"}, want: "held\nabcd\n", wantErrs: []error{nil, nil, nil}},
		{name: "ended early, the line ends there", parts: []string{"ab", "c", "d"}, endAfter: 1, want: "held\nab\n", wantErrs: []error{nil, ErrLineEnded, ErrLineEnded}},
		{name: "a failed write is reported from then on", parts: []string{"ab", "cd", "ef"}, limit: 7, want: "held\nab", wantErrs: []error{nil, errWrite, errWrite}, wantEnd: errWrite},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := &failingWriter{n: 1 << 30}
			if tt.limit > 0 {
				dst.n = tt.limit
			}
			w := NewWriter(dst)
			require.NoError(t, w.Hold([]byte("held")))
			line := w.Stream()
			for i, p := range tt.parts {
				if tt.endAfter > 0 && i == tt.endAfter {
					first, err := line.End()
					assert.True(t, first)
					assert.NoError(t, err)
				}
				assert.ErrorIs(t, line.Write([]byte(p)), tt.wantErrs[i], "part %d", i)
			}
			first, err := line.End()
			assert.Equal(t, tt.endAfter == 0, first, "only the first End ends the line")
			assert.ErrorIs(t, err, tt.wantEnd)

			assert.Equal(t, tt.want, dst.String())
			if tt.limit == 0 {
				require.NoError(t, w.Write([]byte("next")), "the Writer is free again")
				assert.Equal(t, tt.want+"next\n", dst.String())
			}
		})
	}
}

func TestPeekHead(t *testing.T) {
	tests := []struct {
		name       string
		head       string
		wantOK     bool
		wantKind   Kind
		wantID     string
		wantMethod string
	}{
		{name: "a response", head: `{"jsonrpc":"2.0","id":7,"result":{"content":[{"text":"xx`, wantOK: true, wantKind: Response, wantID: "7"},
		{name: "an error response", head: ` { "id" : "a" , "error" : {"message":"xx`, wantOK: true, wantKind: Response, wantID: `"a"`},
		{name: "a request", head: `{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"x":"`, wantOK: true, wantKind: Request, wantID: "1", wantMethod: "sampling/createMessage"},
		{name: "a notification, or a request with its id last", head: `{"method":"notifications/message","jsonrpc":"2.0","params":{"data":"`},
		{name: "an escaped method", head: `{"id":2,"method":"a\/b","params":[1,`, wantOK: true, wantKind: Request, wantID: "2", wantMethod: "a/b"},
		{name: "the id after the result", head: `{"jsonrpc":"2.0","result":{"x":"`},
		{name: "an id cut by the head", head: `{"jsonrpc":"2.0","id":12`},
		{name: "an id spelled twice", head: `{"id":1,"id":2,"result":{"x":"`},
		{name: "an id in another case", head: `{"id":1,"ID":2,"result":{"x":"`},
		{name: "a method before the result", head: `{"id":1,"method":"m","result":{"x":"`},
		{name: "a result then an error", head: `{"id":1,"result":1,"error":{"x":"`},
		{name: "params without a method", head: `{"id":1,"params":{"x":"`},
		{name: "another member runs on", head: `{"id":1,"result":{},"_meta":{"x":"`},
		{name: "the message ends in its head", head: `{"id":1,"result":{}}   `},
		{name: "not an object", head: `[{"id":1,"result":"`},
		{name: "malformed before the head's end", head: `{"id":1,,"result":"`},
		{name: "a malformed id", head: `{"id":01,"result":"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, ok := PeekHead([]byte(tt.head))
			require.Equal(t, tt.wantOK, ok)
			if !ok {
				return
			}
			assert.Equal(t, tt.wantKind, env.Kind)
			assert.Equal(t, tt.wantID, string(env.ID))
			assert.Equal(t, tt.wantMethod, env.Method)
		})
	}
}

// FuzzPeekHead holds PeekHead to Peek: whenever the head of a valid,
// unambiguous message with no routing member past its head settles what
// it is, it reads the kind, id and method Peek reads in the whole
// message. (A routing member past the head is not seen, as documented.)
func FuzzPeekHead(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"text":"xx"}]}}`), uint16(30))
	f.Add([]byte(`{"id":1,"method":"m","params":{"a":[1,2,{"b":"c"}]}}`), uint16(40))
	f.Add([]byte(`{"id":1,"result":{"a":"b"},"id":2}`), uint16(20))
	f.Add([]byte(`{"method":"notifications/x","params":{"a":1},"Method":"y"}`), uint16(35))
	f.Fuzz(func(t *testing.T, msg []byte, cut uint16) {
		head := msg[:min(int(cut), len(msg))]
		got, ok := PeekHead(head)
		if !ok {
			return
		}
		want, err := Peek(msg)
		if err != nil || !json.Valid(msg) || routingMembers(t, msg) != routingSeen(got) {
			return // the rest is relayed unchecked, as documented
		}
		assert.Equal(t, want.Kind, got.Kind, "kind of %q from %q", msg, head)
		assert.Equal(t, string(want.ID), string(got.ID), "id of %q from %q", msg, head)
		assert.Equal(t, want.Method, got.Method, "method of %q from %q", msg, head)
	})
}

// routingMembers counts msg's top-level members that a parser may take
// for a routing member.
func routingMembers(t *testing.T, msg []byte) int {
	members, err := Members(msg)
	require.NoError(t, err)
	n := 0
	for _, m := range members {
		key, err := m.Key()
		require.NoError(t, err)
		for _, r := range routingKeys {
			if strings.EqualFold(key, r) {
				n++
			}
		}
	}
	return n
}

// routingSeen counts the routing members env holds.
func routingSeen(env Envelope) int {
	n := 0
	for _, raw := range [][]byte{env.ID, env.Params, env.Result, env.Error} {
		if raw != nil {
			n++
		}
	}
	if env.Kind == Request || env.Kind == Notification {
		n++ // the method
	}
	return n
}
