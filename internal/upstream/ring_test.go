package upstream

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLineRing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		lines   int
		maxLine int
		writes  []string
		want    []string
	}{
		{name: "nothing", lines: 3, maxLine: 10, writes: nil, want: []string{}},
		{name: "whole lines", lines: 3, maxLine: 10, writes: []string{"a\nb\n"}, want: []string{"a", "b"}},
		{name: "line split across writes", lines: 3, maxLine: 10, writes: []string{"he", "llo\nwor", "ld\n"}, want: []string{"hello", "world"}},
		{name: "keeps the last lines", lines: 2, maxLine: 10, writes: []string{"1\n2\n3\n", "4\n5\n"}, want: []string{"4", "5"}},
		{name: "unterminated last line", lines: 3, maxLine: 10, writes: []string{"a\nlast"}, want: []string{"a", "last"}},
		{name: "unterminated line counts against the size", lines: 2, maxLine: 10, writes: []string{"1\n2\n3"}, want: []string{"2", "3"}},
		{name: "CRLF", lines: 3, maxLine: 10, writes: []string{"a\r\nb\r\n"}, want: []string{"a", "b"}},
		{name: "blank lines skipped", lines: 3, maxLine: 10, writes: []string{"a\n\n  \r\n\nb\n"}, want: []string{"a", "b"}},
		{name: "long line cut", lines: 3, maxLine: 4, writes: []string{"abcdefgh\nok\n"}, want: []string{"abcd…", "ok"}},
		{name: "long line cut across writes", lines: 3, maxLine: 4, writes: []string{"ab", "cdef", "gh\nok"}, want: []string{"abcd…", "ok"}},
		{name: "rune cut at the cap", lines: 3, maxLine: 4, writes: []string{"abcé\n"}, want: []string{"abc\uFFFD…"}},
		{name: "invalid UTF-8", lines: 3, maxLine: 10, writes: []string{"a\xffb\n"}, want: []string{"a\uFFFDb"}},
		{name: "zero lines kept", lines: 0, maxLine: 10, writes: []string{"a\nb\n"}, want: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newLineRing(tt.lines, tt.maxLine)
			for _, w := range tt.writes {
				n, err := r.Write([]byte(w))
				assert.NoError(t, err)
				assert.Equal(t, len(w), n)
			}
			assert.Equal(t, tt.want, r.Lines())
		})
	}
}

func TestLineRingBoundedMemory(t *testing.T) {
	t.Parallel()
	r := newLineRing(2, 8)
	for range 1000 {
		_, _ = r.Write([]byte(strings.Repeat("y", 1000)))
	}
	_, _ = r.Write([]byte("\n"))
	assert.Equal(t, []string{"yyyyyyyy…"}, r.Lines())
	assert.LessOrEqual(t, cap(r.partial), 64, "partial line buffer stays near the cap")
}
