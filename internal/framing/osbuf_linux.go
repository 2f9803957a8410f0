//go:build linux

package framing

import "golang.org/x/sys/unix"

// mapBuffer returns n bytes of memory mapped from the OS, outside the Go
// heap, or nil when the OS refuses.
func mapBuffer(n int) []byte {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil
	}
	return b
}

// remapBuffer grows b, a buffer from mapBuffer, to n bytes keeping its
// contents, without copying them (the pages are moved), or returns nil,
// leaving b as it was, when the OS refuses.
func remapBuffer(b []byte, n int) []byte {
	grown, err := unix.Mremap(b, n, unix.MREMAP_MAYMOVE)
	if err != nil {
		return nil
	}
	return grown
}

// unmapBuffer gives b, a buffer from mapBuffer or remapBuffer, back to the
// OS.
func unmapBuffer(b []byte) { _ = unix.Munmap(b) }
