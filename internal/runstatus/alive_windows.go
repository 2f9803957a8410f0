package runstatus

import "os"

// Alive reports whether process pid exists: on Windows, FindProcess opens
// the process and fails when there is none.
func Alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}
