package upstream

import (
	"errors"
	"os"
	"sync/atomic"
)

// guardianEnv marks a guardian run of the mcpwrap binary; its value is the
// pid of the mcpwrap process that started it.
const guardianEnv = "MCPWRAP_GUARDIAN"

// ErrGuardianNotInstalled is returned by [Start] on Linux when the program
// did not call [RunGuardianIfRequested] at startup: re-executing it as a
// guardian would then run the program itself.
var ErrGuardianNotInstalled = errors.New("upstream: RunGuardianIfRequested was not called at program start")

// guardianInstalled records that RunGuardianIfRequested ran in this process.
var guardianInstalled atomic.Bool

// RunGuardianIfRequested must be the first statement of main, and of
// TestMain in any test binary that starts children through this package.
//
// On Linux, [Start] does not start the command itself: it re-executes the
// running binary as a small guardian process that starts the command. The
// guardian notices when mcpwrap dies, even by SIGKILL, and then terminates
// the command's whole process group, which the kernel alone (Pdeathsig)
// would do only for the direct child. As a child subreaper it also inherits
// the command's orphaned descendants, those that left the group included,
// and kills them when the command exits. In such a guardian run
// RunGuardianIfRequested does the guardian's work and exits the process with
// the command's exit status; otherwise it returns at once. Elsewhere it only
// returns.
func RunGuardianIfRequested() {
	if parent, ok := os.LookupEnv(guardianEnv); ok {
		runGuardian(parent)
	}
	guardianInstalled.Store(true)
}
