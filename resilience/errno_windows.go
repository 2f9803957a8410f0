//go:build windows

package resilience

import (
	"syscall"

	"golang.org/x/sys/windows"
)

// Socket and exec error numbers, by condition. Winsock reports its own
// WSAE* numbers rather than the POSIX ones the syscall package invents.
var (
	refusedErrnos     = []error{syscall.ECONNREFUSED, windows.WSAECONNREFUSED}
	resetErrnos       = []error{syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE, windows.WSAECONNRESET, windows.WSAECONNABORTED}
	unreachableErrnos = []error{syscall.ENETUNREACH, syscall.EHOSTUNREACH, windows.WSAENETUNREACH, windows.WSAEHOSTUNREACH}
	execFormatErrnos  = []error{syscall.ENOEXEC, windows.ERROR_BAD_EXE_FORMAT}
)
