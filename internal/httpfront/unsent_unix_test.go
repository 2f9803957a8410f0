//go:build linux || darwin

package httpfront

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Every connection ConnLimits.Listener accepts (through unsentListener)
// queues at most maxUnsent bytes not yet sent, which TestSlowReaderIsServed
// needs.
func TestListenerLimitsUnsentBytes(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	limited := unsentListener{ln}
	defer limited.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer client.Close()
	c, err := limited.Accept()
	require.NoError(t, err)
	defer c.Close()

	raw, err := c.(*net.TCPConn).SyscallConn()
	require.NoError(t, err)
	var got int
	var gerr error
	require.NoError(t, raw.Control(func(fd uintptr) {
		got, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT)
	}))
	require.NoError(t, gerr)
	assert.Equal(t, maxUnsent, got)
}
