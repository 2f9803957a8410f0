//go:build !windows

package resilience

import "syscall"

// Socket and exec error numbers, by condition. Windows has its own.
var (
	refusedErrnos     = []error{syscall.ECONNREFUSED}
	resetErrnos       = []error{syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE}
	unreachableErrnos = []error{syscall.ENETUNREACH, syscall.EHOSTUNREACH}
	execFormatErrnos  = []error{syscall.ENOEXEC}
)
