package desktop

import "os"

// isExecutableFile reports whether path is a regular file; on Windows its
// extension, checked against PATHEXT by the caller, makes it runnable.
func isExecutableFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
