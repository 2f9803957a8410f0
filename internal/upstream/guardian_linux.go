package upstream

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The guardian protocol. mcpwrap starts the guardian (this binary again,
// with guardianEnv set) as the leader of a new process group, with
// Pdeathsig SIGTERM, the child's stdio as its own fds 0-2, and two pipes:
//
//	fd 3: mcpwrap → guardian, one guardianSpec in JSON, then EOF;
//	fd 4: guardian → mcpwrap, one guardianReport in JSON, then EOF.
//
// The guardian makes itself a child subreaper, starts the command as the
// leader of another new group, passing fds 0-2 straight through, and then
// replaces its own fds 0 and 1 with /dev/null: the child's pipes must end
// when the child closes them, not when the guardian exits. It reports the
// pid (or why it could not start it), and then stays until the command
// exits:
//
//   - SIGTERM or SIGINT from anyone but the kernel's parent-death signal is
//     forwarded to the command's group;
//   - when mcpwrap dies, the group gets SIGTERM and, after the spec's
//     OrphanGrace, SIGKILL;
//   - a descendant orphaned meanwhile (its parent exited) is re-parented to
//     the guardian, which reaps it when it exits;
//   - when the command exits, what is left of its group is killed (still
//     before the command is reaped, so its group id cannot be reused), then
//     every remaining descendant, those that left the group with setsid or
//     setpgid included, is killed and reaped; and the guardian exits the way
//     the command did: same code, or death by the same signal.
//
// The spec travels over a pipe rather than in the guardian's argv or
// environment so that the guardian runs with mcpwrap's environment (not the
// command's, which may set GODEBUG and the like) and nothing about the
// command beyond its name shows in the guardian's argv.
const (
	guardianSpecFD   = 3
	guardianReportFD = 4
)

// Exit codes of a guardian that did not get to start the command.
const (
	guardianExitOrphan      = 125 // mcpwrap was gone before the command started
	guardianExitBadSpec     = 126 // the spec could not be read
	guardianExitStartFailed = 127 // the command could not be started
)

// guardianSpec is what the guardian starts.
type guardianSpec struct {
	Path        string        `json:"path"`
	Args        []string      `json:"args"`
	Env         []string      `json:"env"`
	Dir         string        `json:"dir,omitempty"`
	OrphanGrace time.Duration `json:"orphan_grace"`
}

// guardianReport is the outcome of the start: the command's pid, or the
// start error taken apart so that mcpwrap can rebuild it for errors.Is.
type guardianReport struct {
	Pid   int    `json:"pid,omitempty"`
	Op    string `json:"op,omitempty"`    // *fs.PathError's Op
	Path  string `json:"path,omitempty"`  // *fs.PathError's Path
	Errno int    `json:"errno,omitempty"` // syscall.Errno, 0 if none
	Error string `json:"error,omitempty"`
}

func failureReport(err error) guardianReport {
	r := guardianReport{Error: err.Error()}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		r.Errno = int(errno)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		r.Op, r.Path = pe.Op, pe.Path
	}
	return r
}

// err rebuilds the start error, keeping its errno.
func (r guardianReport) err() error {
	cause := errors.New(r.Error)
	if r.Errno != 0 {
		cause = syscall.Errno(r.Errno)
	}
	if r.Op != "" {
		return &fs.PathError{Op: r.Op, Path: r.Path, Err: cause}
	}
	return cause
}

// runGuardian is the guardian's main. It never returns.
func runGuardian(parentPid string) {
	os.Exit(guard(parentPid))
}

// guard runs the guardian and returns its exit code, unless it mirrors the
// command's death by a signal, in which case it does not return.
func guard(parentPid string) int {
	// Fds 3 and 4 were inherited without close-on-exec; the command must
	// not inherit them in turn.
	syscall.CloseOnExec(guardianSpecFD)
	syscall.CloseOnExec(guardianReportFD)
	specFile := os.NewFile(guardianSpecFD, "guardian-spec")
	report := os.NewFile(guardianReportFD, "guardian-report")
	defer report.Close()

	// Handle SIGTERM before checking the parent: from here on, the
	// parent-death signal cannot be lost.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	signal.Ignore(syscall.SIGHUP)

	parent, err := strconv.Atoi(parentPid)
	if err != nil || os.Getppid() != parent {
		// mcpwrap died before Pdeathsig was armed: start nothing.
		return guardianExitOrphan
	}

	var spec guardianSpec
	err = json.NewDecoder(specFile).Decode(&spec)
	_ = specFile.Close()
	if err != nil {
		_ = json.NewEncoder(report).Encode(failureReport(err))
		return guardianExitBadSpec
	}
	if spec.Env == nil {
		spec.Env = []string{} // nil would mean this process's environment
	}

	// Descendants that leave the command's group, and so escape a signal
	// to it, are re-parented to the guardian when their parent exits
	// instead of to init, so that sweep can still find them. A kernel
	// older than 3.4 refuses: the group is then all the guardian kills.
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)

	// The command's Pdeathsig (a last resort for when the guardian itself
	// is SIGKILLed) fires when the forking thread exits (golang/go#27505),
	// so fork from a locked thread that is kept until the process exits.
	runtime.LockOSThread()
	cmd := &exec.Cmd{
		Path:   spec.Path,
		Args:   spec.Args,
		Env:    spec.Env,
		Dir:    spec.Dir,
		Stdin:  os.Stdin,
		Stdout: os.Stdout,
		Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:   true,
			Pdeathsig: syscall.SIGKILL,
		},
	}
	if err := cmd.Start(); err != nil {
		_ = json.NewEncoder(report).Encode(failureReport(err))
		return guardianExitStartFailed
	}
	releaseChildPipes()
	_ = json.NewEncoder(report).Encode(guardianReport{Pid: cmd.Process.Pid})
	_ = report.Close()

	g := &guardian{pgid: cmd.Process.Pid, parent: parent, orphanGrace: spec.OrphanGrace}
	go g.relaySignals(sigs)

	awaitCommand(g.pgid)
	g.finish()
	state, err := cmd.Process.Wait()
	sweep()
	if err != nil {
		return 1
	}
	mirrorExit(state)
	return state.ExitCode()
}

// releaseChildPipes points the guardian's stdin and stdout at /dev/null
// once the command has its own copies: a child that closes either must be
// seen to close it. Stderr stays, for the guardian's own last words.
func releaseChildPipes() {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		// Without /dev/null, closing is what matters; the numbers may be
		// reused by the guardian's next open, which writes nothing to them.
		_ = unix.Close(0)
		_ = unix.Close(1)
		return
	}
	defer null.Close()
	for _, fd := range []int{0, 1} {
		_ = unix.Dup3(int(null.Fd()), fd, 0)
	}
}

// awaitCommand returns once the command pid has exited, without reaping
// it: while the command is a zombie its pid, and so its group id, cannot
// be reused by another process. Meanwhile it reaps the orphaned
// descendants re-parented to the guardian as they exit.
func awaitCommand(pid int) {
	for {
		var info childSiginfo
		err := unix.Waitid(unix.P_ALL, 0, info.siginfo(), unix.WEXITED|unix.WNOWAIT, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			return // ECHILD: the command is gone already
		}
		if info.pid() == pid {
			return
		}
		var ws unix.WaitStatus
		_, _ = unix.Wait4(info.pid(), &ws, unix.WNOHANG, nil)
	}
}

// childSiginfo is a siginfo_t as waitid fills it for a child: si_pid is
// the first member of the union that follows three ints, aligned like a
// pointer.
type childSiginfo struct {
	raw [128]byte
}

// siPidOffset is where si_pid starts in a siginfo_t.
const siPidOffset = (3*4 + unsafe.Sizeof(uintptr(0)) - 1) &^ (unsafe.Sizeof(uintptr(0)) - 1)

func (s *childSiginfo) siginfo() *unix.Siginfo {
	return (*unix.Siginfo)(unsafe.Pointer(&s.raw))
}

func (s *childSiginfo) pid() int {
	return int(int32(binary.NativeEndian.Uint32(s.raw[siPidOffset:])))
}

// sweep kills and reaps every child the guardian has left, until it has
// none: descendants of the command, re-parented to the guardian (a child
// subreaper) when their parents exited. Killing only its own children,
// which it has not reaped, the guardian never signals a reused pid; a
// killed child's own children become the guardian's before it can be
// reaped, and are found on the next round.
func sweep() {
	for {
		kids := childrenOf(os.Getpid())
		for _, pid := range kids {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		var ws unix.WaitStatus
		if len(kids) == 0 {
			// Reap what has exited; a child the scan missed (no /proc)
			// cannot be waited for, or the guardian would hang.
			for {
				if pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil); pid <= 0 && !errors.Is(err, syscall.EINTR) {
					return
				}
			}
		}
		if _, err := unix.Wait4(-1, &ws, 0, nil); errors.Is(err, syscall.ECHILD) {
			return
		}
	}
}

// childrenOf lists the processes whose parent is pid, from /proc; nil if
// /proc cannot be read.
func childrenOf(pid int) []int {
	dir, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return nil
	}
	var kids []int
	for _, name := range names {
		p, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(p); ok && ppid == pid {
			kids = append(kids, p)
		}
	}
	return kids
}

// parentOf reads pid's parent from /proc/PID/stat, whose second field, the
// command name in parentheses, may hold spaces and parentheses itself.
func parentOf(pid int) (int, bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	fields := bytes.Fields(stat[i+1:]) // state, ppid, ...
	if len(fields) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(string(fields[1]))
	return ppid, err == nil
}

// guardian holds the started command's process group.
type guardian struct {
	pgid        int
	parent      int
	orphanGrace time.Duration

	mu       sync.Mutex
	finished bool // the group id may no longer be signalled
}

// signal sends sig to the command's group unless it is finished.
func (g *guardian) signal(sig syscall.Signal) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.finished {
		_ = signalGroup(g.pgid, sig)
	}
}

// finish kills what is left of the group once its leader has exited, and
// stops all further signalling; the leader must not be reaped yet.
func (g *guardian) finish() {
	g.mu.Lock()
	defer g.mu.Unlock()
	_ = signalGroup(g.pgid, syscall.SIGKILL)
	g.finished = true
}

// relaySignals forwards SIGTERM and SIGINT to the group, and terminates the
// group when SIGTERM is the parent-death signal. Pdeathsig reparents the
// guardian before it signals it, so Getppid tells the two apart.
func (g *guardian) relaySignals(sigs <-chan os.Signal) {
	for sig := range sigs {
		s, _ := sig.(syscall.Signal)
		if s == syscall.SIGTERM && os.Getppid() != g.parent {
			g.signal(syscall.SIGTERM)
			t := time.NewTimer(g.orphanGrace)
			<-t.C
			g.signal(syscall.SIGKILL)
			return
		}
		g.signal(s)
	}
}

// mirrorExit makes the guardian die of the signal that killed the command,
// so that mcpwrap reads the same wait status. It returns if the command
// exited normally.
func mirrorExit(state *os.ProcessState) {
	ws, ok := state.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return
	}
	dieOf(ws.Signal())
	os.Exit(128 + int(ws.Signal())) // the shell's convention, if dieOf returns
}

// dieOf kills the process with sig, with the signal's default action. It
// returns only if that action does not terminate.
func dieOf(sig syscall.Signal) {
	// Raise the signal on this very thread, with it unblocked here: a
	// process-directed kill may be handled by another thread while this one
	// runs on to the fallback exit.
	runtime.LockOSThread()
	signal.Reset(sig)
	const sigsetSize = 8 // bytes in the kernel's sigset_t (64 signals)
	if sig != syscall.SIGKILL && sig != syscall.SIGSTOP {
		// The Go runtime keeps a handler for every signal and treats a
		// SIGSEGV or SIGABRT sent by kill as a crash of its own (trace,
		// exit code 2): restore the kernel default directly. A zeroed
		// struct sigaction is SIG_DFL with no flags and an empty mask.
		var act [8]uint64
		if _, _, errno := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig),
			uintptr(unsafe.Pointer(&act)), 0, sigsetSize, 0, 0); errno != 0 {
			return
		}
	}
	set := uint64(1) << (sig - 1)
	_, _, _ = syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, unix.SIG_UNBLOCK,
		uintptr(unsafe.Pointer(&set)), 0, sigsetSize, 0, 0)
	// The command already dumped core if that was wanted; no second one.
	_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{})
	_ = unix.Tgkill(os.Getpid(), unix.Gettid(), sig)
}
