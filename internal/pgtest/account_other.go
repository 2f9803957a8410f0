//go:build !unix

package pgtest

import (
	"errors"
	"os/exec"
)

type account struct{}

func unprivileged() (*account, error) {
	return nil, errors.New("pgtest: throwaway clusters need a unix system")
}

func (*account) chown(string) error { return nil }
func (*account) apply(*exec.Cmd)    {}
