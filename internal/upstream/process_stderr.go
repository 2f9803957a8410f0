package upstream

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
)

// stderrChunk is the most a stderr line is buffered before it is passed on
// anyway: a child printing a huge line without a newline costs no more.
const stderrChunk = 4096

// pumpStderr copies the child's stderr from r to out (nil = discard) and
// into tail until r ends. Complete lines are written with one Write each, so
// they do not interleave mid-line with mcpwrap's own log lines; an
// unterminated line is held until its newline, until it reaches stderrChunk
// bytes, or until r ends. A failing out is logged once and then skipped:
// the child must never block on its stderr.
func pumpStderr(r io.Reader, out io.Writer, tail io.Writer, log *slog.Logger) {
	br := bufio.NewReaderSize(r, stderrChunk)
	for {
		piece, err := br.ReadSlice('\n')
		if len(piece) > 0 {
			_, _ = tail.Write(piece)
			if out != nil {
				if _, werr := out.Write(piece); werr != nil {
					log.Warn("upstream stderr pass-through failed; keeping only the tail", "error", werr)
					out = nil
				}
			}
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return
		default:
			log.Debug("upstream stderr closed", "error", err)
			return
		}
	}
}
