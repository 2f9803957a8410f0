//go:build unix && !linux

package main

import "io"

// newBlockingStdin reports that a blocked read cannot be ended here (see
// the Linux version): closableStdin then uses a pollStdin.
func newBlockingStdin(int, string, bool) (io.ReadCloser, bool) { return nil, false }
