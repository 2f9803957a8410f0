// Package pipesize enlarges the kernel buffer of a pipe, so that a large
// message crosses it in fewer, larger steps: each step of a 64 KiB pipe
// costs a write, a read and a wake-up of each side, which a relay in the
// middle of two pipes pays twice.
package pipesize

import "os"

// Size is the buffer Grow asks for: 1 MiB, the most an unprivileged
// process may set on Linux by default (/proc/sys/fs/pipe-max-size).
const Size = 1 << 20

// Grow asks the kernel to make the buffer of the pipe f is an end of Size
// bytes. It does nothing where pipes cannot be resized (anything but
// Linux), when f is not a pipe, or when the kernel refuses: the buffer is
// only a matter of speed.
func Grow(f *os.File) { grow(f) }
