//go:build !linux

package upstream

// runGuardian does nothing: only Linux uses a guardian.
func runGuardian(string) {}
