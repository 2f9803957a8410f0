package framing

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingWriter records each write call.
type countingWriter struct{ writes []string }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes = append(w.writes, string(p))
	return len(p), nil
}

func TestWriterCoalescesHeldLines(t *testing.T) {
	var dst countingWriter
	w := NewWriter(&dst)
	require.NoError(t, w.Hold([]byte(`{"a":1}`)))
	require.NoError(t, w.Hold([]byte(`{"b":2}`)))
	assert.Empty(t, dst.writes, "held lines wait")
	require.NoError(t, w.Write([]byte(`{"c":3}`)))
	assert.Equal(t, []string{"{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n"}, dst.writes, "one write for the run")

	dst.writes = nil
	require.NoError(t, w.Hold([]byte(`{"d":4}`)))
	require.NoError(t, w.Flush())
	require.NoError(t, w.Flush())
	assert.Equal(t, []string{"{\"d\":4}\n"}, dst.writes, "Flush writes what is held, once")
}

func TestWriterHoldsNoMoreThanItsBuffer(t *testing.T) {
	var dst countingWriter
	w := NewWriter(&dst)
	line := bytes.Repeat([]byte("x"), writeBuffer/2)
	require.NoError(t, w.Hold(line))
	require.NoError(t, w.Hold(line))
	assert.Equal(t, []string{string(line) + "\n"}, dst.writes, "the first goes out when the second would not fit")

	big := bytes.Repeat([]byte("y"), writeBuffer)
	require.NoError(t, w.Hold(big))
	assert.Equal(t, []string{string(line) + "\n", string(line) + "\n", string(big), "\n"}, dst.writes,
		"a line too large to copy is written at once, after what was held")
}
