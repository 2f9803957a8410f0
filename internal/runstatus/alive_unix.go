//go:build unix && !linux

package runstatus

import (
	"errors"
	"syscall"
)

// Alive reports whether process pid exists. Without /proc, a pid reused by
// another program cannot be told apart cheaply.
func Alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
