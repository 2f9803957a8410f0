//go:build linux || darwin

package httpfront

import (
	"net"

	"golang.org/x/sys/unix"
)

// limitUnsent bounds the bytes c's socket queues that it has not sent yet
// (TCP_NOTSENT_LOWAT) to maxUnsent, when c is a TCP connection.
func limitUnsent(c net.Conn) error {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NOTSENT_LOWAT, maxUnsent)
	}); err != nil {
		return err
	}
	return serr
}
