package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/syncbuf"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requirePodmanEnv turns "podman is not installed" from a skip into a failure.
const requirePodmanEnv = "MCPWRAP_E2E_REQUIRE_PODMAN"

// imageUID is the numeric user the Dockerfile runs mcpwrap as.
const imageUID = "65532"

// podmanEngine is podman and the flags this machine needs to run a container.
type podmanEngine struct {
	path string
	// run are flags for `podman run`, before the image:
	//   - limits no higher than the usual ones: without CAP_SYS_RESOURCE (a container host may
	//     withhold it) podman's defaults, which raise them, are refused (setrlimit EPERM);
	//   - the host's network: no bridge, no port mapping, nothing but loopback is needed.
	run []string
	// global are flags before the command: runc where cgroups are mounted in hybrid mode (v1
	// controllers and a v2 hierarchy at /sys/fs/cgroup/unified), which crun refuses to run in.
	global []string
}

// requirePodman returns podman, or skips (fails with requirePodmanEnv set).
func requirePodman(t *testing.T) podmanEngine {
	t.Helper()
	skip := func(msg string) podmanEngine {
		if os.Getenv(requirePodmanEnv) != "" {
			t.Fatalf("%s (%s is set)", msg, requirePodmanEnv)
		}
		t.Skip(msg)
		return podmanEngine{}
	}
	path, err := exec.LookPath("podman")
	if err != nil {
		return skip("podman is not installed: apt-get install podman")
	}
	e := podmanEngine{path: path, run: []string{"--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096", "--network", "host"}}
	if _, err := os.Stat("/sys/fs/cgroup/unified/cgroup.controllers"); err == nil {
		if _, err := exec.LookPath("runc"); err != nil {
			return skip("cgroups are in hybrid mode, which crun refuses, and runc is not installed: apt-get install runc")
		}
		e.global = []string{"--runtime", "runc"}
	}
	return e
}

// command returns `podman GLOBAL args...`.
func (e podmanEngine) command(ctx context.Context, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, e.path, append(append([]string{}, e.global...), args...)...)
}

// output runs `podman args...` and returns its stdout, failing the test on an error.
func (e podmanEngine) output(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	cmd := e.command(ctx, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "podman %s\n%s", strings.Join(args, " "), stderr.String())
	return strings.TrimSpace(string(out))
}

// buildImage builds the repository's Dockerfile with BINARY=prebuilt from a static binary built
// here, so that no image is pulled, and returns its tag; t.Cleanup removes it.
func buildImage(ctx context.Context, t *testing.T, e podmanEngine) string {
	t.Helper()
	here, err := os.Getwd() // e2e/
	require.NoError(t, err)
	root := filepath.Dir(here)
	dir := t.TempDir() // the build context
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", filepath.Join(dir, "mcpwrap"), "./cmd/mcpwrap")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build\n%s", out)
	certs, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	if err != nil {
		certs = nil // an image without roots still runs; only --url https servers need them
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ca-certificates.crt"), certs, 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "state"), 0o755))

	tag := "localhost/mcpwrap-e2e:" + strings.ToLower(rand.Text()[:12])
	dangling := func() []string {
		return strings.Fields(e.output(ctx, t, "images", "--all", "--quiet", "--no-trunc", "--filter", "dangling=true"))
	}
	before := dangling()
	e.output(ctx, t, "build", "--build-arg", "BINARY=prebuilt", "--pull=never", "-f", filepath.Join(root, "Dockerfile"), "-t", tag, dir)
	var stages []string // the build's intermediate images (the prebuilt stage), kept untagged
	for _, id := range dangling() {
		if !slices.Contains(before, id) {
			stages = append(stages, id)
		}
	}
	t.Cleanup(func() { e.cleanup(append([]string{"rmi", "-f", tag}, stages...)...) })
	return tag
}

// cleanup runs `podman args...` for a t.Cleanup, within 30 s, whatever the test's context.
func (e podmanEngine) cleanup(args ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = e.command(ctx, args...).Run()
}

// TestImage builds the Dockerfile's image with podman (FROM scratch, no base image pulled) and
// runs it as a gateway would: `mcpwrap --listen` wrapping the binary's own demo server. It is
// static (nothing but the binary, the CA roots and the state directory), runs as the numeric
// non-root user, answers the probes and MCP clients of both eras, and stops cleanly on SIGTERM.
func TestImage(t *testing.T) {
	e := requirePodman(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 3*testTimeout)
	defer cancel()
	tag := buildImage(ctx, t, e)

	var img []struct {
		Size   int64
		Config struct{ User string }
		RootFS struct{ Layers []string }
	}
	require.NoError(t, json.Unmarshal([]byte(e.output(ctx, t, "image", "inspect", tag)), &img))
	require.Len(t, img, 1)
	assert.Equal(t, imageUID+":"+imageUID, img[0].Config.User, "a numeric non-root user")
	assert.Len(t, img[0].RootFS.Layers, 3, "FROM scratch: the CA roots, the binary, the state directory; no base layers")
	t.Logf("image %s: %.1f MB, %d layers", tag, float64(img[0].Size)/1e6, len(img[0].RootFS.Layers))

	name := "mcpwrap-e2e-" + strings.ToLower(rand.Text()[:12])
	args := append(append([]string{"run", "--rm", "--name", name}, e.run...),
		tag, "--listen", "127.0.0.1:0", "--log-format", "json", "--name", "demo", "--", "/mcpwrap", "demo-server")
	run := e.command(context.Background(), args...) // stopped by SIGTERM below, or killed by the cleanup
	logs, err := run.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, run.Start())
	done := make(chan error, 1)
	listening := make(chan string, 1)
	stderr := &syncbuf.Buffer{}
	go func() {
		sc := bufio.NewScanner(logs)
		for sc.Scan() {
			stderr.Write(append(sc.Bytes(), '\n'))
			var rec struct{ Msg, URL string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "listening" {
				listening <- rec.URL
			}
		}
		_, _ = io.Copy(io.Discard, logs)
		done <- run.Wait()
	}()
	t.Cleanup(func() {
		e.cleanup("rm", "-f", "-t", "0", name)
		if t.Failed() {
			t.Logf("container log:\n%s", stderr)
		}
	})
	var url string
	select {
	case url = <-listening:
	case err := <-done:
		require.FailNow(t, "the container exited before listening", "%v\n%s", err, stderr)
	case <-ctx.Done():
		require.FailNow(t, "the container is not listening", "%s", stderr)
	}

	code, body := probe(ctx, t, url, "/healthz")
	assert.Equal(t, 200, code, body)
	code, body = probe(ctx, t, url, "/readyz")
	assert.Equal(t, 200, code, body)
	pid, err := strconv.Atoi(e.output(ctx, t, "inspect", "--format", "{{.State.Pid}}", name))
	require.NoError(t, err)
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^Uid:\s+`+imageUID+`\s+`+imageUID+`\s`, string(status), "mcpwrap runs as the image's user")

	for _, era := range eras {
		cs, err := connectHTTP(ctx, t, newClient(nil), &mcp.StreamableClientTransport{Endpoint: url}, era.version)
		require.NoError(t, err, era.name)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "from " + era.name}})
		require.NoError(t, err, era.name)
		require.False(t, res.IsError, "%v", res.Content)
		assert.Equal(t, "from "+era.name, res.Content[0].(*mcp.TextContent).Text)
		require.NoError(t, cs.Close())
	}

	// SIGTERM to `podman run` reaches mcpwrap, which drains and exits 0.
	require.NoError(t, run.Process.Signal(os.Interrupt))
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			require.FailNow(t, "the container's exit", "%v\n%s", err, stderr)
		}
		require.NoError(t, err)
	case <-ctx.Done():
		require.FailNow(t, "the container did not stop", "%s", stderr)
	}
	assert.Contains(t, stderr.String(), `"msg":"stopped"`)
}
