package framing

import (
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readAll reads r to its end: the lines, and "ERR" for each line too long.
func readAll(t *testing.T, r *Reader) []string {
	t.Helper()
	var got []string
	for {
		line, err := r.Read()
		if errors.Is(err, io.EOF) {
			return got
		}
		if errors.Is(err, ErrLineTooLong) {
			got = append(got, "ERR")
			continue
		}
		require.NoError(t, err)
		got = append(got, string(line))
	}
}

func TestReaderGrowsByDoublingAndReleasesAfterALargeLine(t *testing.T) {
	big := strings.Repeat("x", 5*minBuffer)
	r := NewReader(strings.NewReader("small\n"+big+"\nafter\n"), 0)

	line, err := r.Read()
	require.NoError(t, err)
	assert.Equal(t, "small", string(line))
	assert.Equal(t, minBuffer, len(r.buf), "a small line needs no more than the usual buffer")

	line, err = r.Read()
	require.NoError(t, err)
	assert.Equal(t, big, string(line))
	assert.Equal(t, 8*minBuffer, len(r.buf), "grown by doubling to the first size that holds the line")

	line, err = r.Read()
	require.NoError(t, err)
	assert.Equal(t, "after", string(line))
	assert.Equal(t, minBuffer, len(r.buf), "given back once the large line is consumed")
}

func TestReaderNeverGrowsPastTheLimit(t *testing.T) {
	const limit = 3*minBuffer + 5
	r := NewReader(strings.NewReader(strings.Repeat("x", 10*minBuffer)+"\nok\n"), limit)
	_, err := r.Read()
	var e *LineTooLongError
	require.ErrorAs(t, err, &e)
	assert.Equal(t, int64(10*minBuffer), e.Size)
	assert.Equal(t, minBuffer, len(r.buf), "skipping the rest of the line gives the grown buffer back")

	line, err := r.Read()
	require.NoError(t, err)
	assert.Equal(t, "ok", string(line))
}

func TestReaderGrowthStopsOneBytePastTheLimit(t *testing.T) {
	const limit = 2*minBuffer + 1
	var sizes []int
	var r *Reader
	src := strings.NewReader(strings.Repeat("x", 3*limit) + "\n")
	r = NewReader(readerFunc(func(p []byte) (int, error) { // 4 KiB at a time
		sizes = append(sizes, len(r.buf))
		return src.Read(p[:min(len(p), 4<<10)])
	}), limit)
	_, err := r.Read()
	require.ErrorIs(t, err, ErrLineTooLong)
	assert.Equal(t, limit+1, slicesMax(sizes), "the buffer holds at most limit+1 bytes: enough to tell the line is too long")
}

type readerFunc func(p []byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func slicesMax(s []int) int {
	m := 0
	for _, v := range s {
		m = max(m, v)
	}
	return m
}

func TestReaderSplitsTheSameWhateverTheReadSizes(t *testing.T) {
	input := "a\n\n" + strings.Repeat("y", 3*minBuffer) + "\n" + strings.Repeat("z", 5*minBuffer) + "\n{\"id\":1}\r\nlast"
	want := []string{"a", strings.Repeat("y", 3*minBuffer), "ERR", "{\"id\":1}\r", "last"}
	sources := map[string]func(io.Reader) io.Reader{
		"whole":    func(r io.Reader) io.Reader { return r },
		"one byte": iotest.OneByteReader,
		"halves":   iotest.HalfReader,
		"data+EOF": iotest.DataErrReader,
	}
	for name, wrap := range sources {
		t.Run(name, func(t *testing.T) {
			r := NewReader(wrap(strings.NewReader(input)), 4*minBuffer)
			assert.Equal(t, want, readAll(t, r))
		})
	}
}

func TestReaderReportsAReadErrorAfterTheBufferedLines(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(strings.NewReader("a\npartial"), iotest.ErrReader(boom)), 0)
	line, err := r.Read()
	require.NoError(t, err)
	assert.Equal(t, "a", string(line))
	_, err = r.Read()
	assert.ErrorIs(t, err, boom, "a line cut short by an error other than EOF is not a line")
}

func TestReaderKeepsFailingWhenTheSourceMakesNoProgress(t *testing.T) {
	r := NewReader(readerFunc(func([]byte) (int, error) { return 0, nil }), 0)
	_, err := r.Read()
	assert.ErrorIs(t, err, io.ErrNoProgress)
}

func TestReaderBuffered(t *testing.T) {
	pr, pw := io.Pipe()
	r := NewReader(pr, 0)
	go func() { _, _ = pw.Write([]byte("one\ntwo\nthr")) }()
	assert.False(t, r.Buffered(), "nothing read yet")
	line, err := r.Read()
	require.NoError(t, err)
	assert.Equal(t, "one", string(line))
	assert.True(t, r.Buffered(), "the next line is already here")
	line, err = r.Read()
	require.NoError(t, err)
	assert.Equal(t, "two", string(line))
	assert.False(t, r.Buffered(), "a partial line is not a line")
	go func() { _, _ = pw.Write([]byte("ee\n")); pw.Close() }()
	line, err = r.Read()
	require.NoError(t, err)
	assert.Equal(t, "three", string(line))
	_, err = r.Read()
	assert.ErrorIs(t, err, io.EOF)
}

func TestReaderGivesALargeBufferBackToTheOS(t *testing.T) {
	big := strings.Repeat("z", 3*mapFrom)
	r := NewReader(iotest.HalfReader(strings.NewReader(big+"\n"+big+"x\nafter\n")), 0)
	line, err := r.Read()
	require.NoError(t, err)
	require.Equal(t, big, string(line))
	assert.Equal(t, 4*mapFrom, len(r.buf), "grown by doubling")
	if runtime.GOOS == "linux" {
		assert.NotNil(t, r.mapped, "a large buffer is mapped from the OS")
	}
	line, err = r.Read()
	require.NoError(t, err)
	require.Equal(t, big+"x", string(line), "a second large line right after the first")
	line, err = r.Read()
	require.NoError(t, err)
	assert.Equal(t, "after", string(line))
	assert.Nil(t, r.mapped, "unmapped once the large lines are consumed")
	assert.Equal(t, minBuffer, len(r.buf))
}
