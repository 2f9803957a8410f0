//go:build !linux && !darwin

package httpfront

import "net"

// limitUnsent does nothing where TCP_NOTSENT_LOWAT is unknown: a blocked
// write there sees the client's progress as the system lets it.
func limitUnsent(net.Conn) error { return nil }
