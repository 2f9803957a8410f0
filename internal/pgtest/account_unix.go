//go:build unix

package pgtest

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
)

// account is the unprivileged user the server runs as when the tests run
// as root; nil means the tests' own user.
type account struct{ uid, gid int }

// unprivileged returns the account to run PostgreSQL as: nobody when the
// tests run as root, else nil.
func unprivileged() (*account, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("running as root, and no unprivileged user to run PostgreSQL as: %w", err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return nil, err
	}
	return &account{uid: uid, gid: gid}, nil
}

func (a *account) chown(path string) error {
	if a == nil {
		return nil
	}
	return os.Chown(path, a.uid, a.gid)
}

func (a *account) apply(cmd *exec.Cmd) {
	if a == nil {
		return
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(a.uid), Gid: uint32(a.gid)}}
	cmd.Env = append(cmd.Env, "HOME="+os.TempDir(), "USER=nobody")
}
