package framing

import (
	"bytes"
	"strings"
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
	small := bytes.Repeat([]byte("s"), holdBytes/4)
	for range 3 {
		require.NoError(t, w.Hold(small))
	}
	assert.Empty(t, dst.writes, "lines under holdBytes are kept back")
	require.NoError(t, w.Hold(small))
	held := strings.Repeat(string(small)+"\n", 4)
	assert.Equal(t, []string{held}, dst.writes, "once they come to holdBytes they go out, in one write")

	line := bytes.Repeat([]byte("x"), writeBuffer/2)
	require.NoError(t, w.Hold(line))
	assert.Equal(t, []string{held, string(line) + "\n"}, dst.writes, "a line of holdBytes or more goes out at once")

	require.NoError(t, w.Hold(small))
	big := bytes.Repeat([]byte("y"), writeBuffer)
	require.NoError(t, w.Hold(big))
	assert.Equal(t, []string{held, string(line) + "\n", string(small) + "\n", string(big), "\n"}, dst.writes,
		"a line too large to copy is written where it is, after what was held")
}
