//go:build !linux

package filewatch

// remoteFS names the file system holding dir when its notifications report
// only this machine's changes; outside Linux it is not known, and "".
func remoteFS(string) string { return "" }
