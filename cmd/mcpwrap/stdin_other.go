//go:build !unix

package main

import "io"

// closableStdin returns stdin as it is, with no closer: see the unix
// version.
func closableStdin(stdin io.Reader) (io.Reader, io.Closer) { return stdin, nil }
