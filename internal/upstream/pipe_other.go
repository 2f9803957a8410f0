//go:build !unix

package upstream

import (
	"errors"
	"os"
)

// pipeWatch is not available here: a child that closes its stdin is seen
// when a message written to it fails.
type pipeWatch struct{}

func watchReaders(*os.File) (*pipeWatch, error) {
	return nil, errors.New("not supported on this system")
}

func (*pipeWatch) Gone() <-chan struct{} { return nil }

func (*pipeWatch) Stop() {}
