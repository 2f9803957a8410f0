package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// throughArg, as the test binary's first argument, makes it run a client through mcpwrap
// (runThrough) instead of the tests: the conformance suite's client scenarios name one command
// to run against their scenario server, and this puts mcpwrap between the two.
const throughArg = "mcpwrap-e2e-through"

// runThrough runs `MCPWRAP --listen 127.0.0.1:0 --url URL` and then `CLIENT LISTEN_URL` with the
// environment the suite gave (the scenario's name and context), for args MCPWRAP CLIENT URL; it
// returns the client's exit code once mcpwrap has stopped. mcpwrap's log goes to stderr.
func runThrough(args []string) int {
	if len(args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: through MCPWRAP CLIENT URL")
		return 2
	}
	wrapper, client, target := args[0], args[1], args[2]
	stateDir, err := os.MkdirTemp("", "mcpwrap-e2e-through-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "through:", err)
		return 1
	}
	defer os.RemoveAll(stateDir)

	config := filepath.Join(stateDir, "config.json")
	if err := os.WriteFile(config, []byte(`{}`), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "through:", err)
		return 1
	}
	wrap := exec.Command(wrapper, "--listen", "127.0.0.1:0", "--log-format", "json", "--name", "scenario",
		"--config", config, "--state-dir", stateDir, "--url", target)
	logs, err := wrap.StderrPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "through:", err)
		return 1
	}
	if err := wrap.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "through:", err)
		return 1
	}
	listening := make(chan string, 1)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(logs)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			fmt.Fprintln(os.Stderr, sc.Text())
			var rec struct {
				Msg string `json:"msg"`
				URL string `json:"url"`
			}
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "listening" {
				select {
				case listening <- rec.URL:
				default:
				}
			}
		}
	}()
	stop := func() {
		_ = wrap.Process.Signal(syscall.SIGTERM)
		<-copied
		_ = wrap.Wait()
	}
	var url string
	select {
	case url = <-listening:
	case <-copied:
		_ = wrap.Wait()
		fmt.Fprintln(os.Stderr, "through: mcpwrap exited before listening")
		return 1
	case <-time.After(10 * time.Second):
		stop()
		fmt.Fprintln(os.Stderr, "through: mcpwrap is not listening")
		return 1
	}
	run := exec.Command(client, url)
	run.Stdout, run.Stderr = os.Stdout, os.Stderr
	err = run.Run()
	stop()
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "through:", err)
		return 1
	}
	return 0
}
