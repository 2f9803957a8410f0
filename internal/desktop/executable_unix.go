//go:build !windows

package desktop

import "os"

// isExecutableFile reports whether path is a regular file someone may run.
func isExecutableFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
