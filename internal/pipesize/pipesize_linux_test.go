package pipesize

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestGrow(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	defer w.Close()
	Grow(w)
	size, err := unix.FcntlInt(r.Fd(), unix.F_GETPIPE_SZ, 0)
	require.NoError(t, err)
	assert.Equal(t, Size, size, "both ends share the one buffer")

	f, err := os.CreateTemp(t.TempDir(), "not-a-pipe")
	require.NoError(t, err)
	defer f.Close()
	Grow(f) // no panic, no effect
}
