package middleware

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// step is one line of a transcript script: a message sent by the client
// (">") or by the upstream ("<").
type step struct {
	fromClient bool
	raw        string
}

func readScript(t *testing.T, path string) []step {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var steps []step
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "> "):
			steps = append(steps, step{fromClient: true, raw: line[2:]})
		case strings.HasPrefix(line, "< "):
			steps = append(steps, step{raw: line[2:]})
		}
	}
	require.NoError(t, sc.Err())
	return steps
}

// runScript plays steps through a Session and returns the transcript of
// what each side received, in the script's format.
func runScript(t *testing.T, steps []step) []byte {
	t.Helper()
	client, clientConn := newPeer(t, 0)
	up, upConn := newPeer(t, 0)
	s := &Session{Name: "fixture", Client: clientConn, Dial: dialOnce(upConn)}
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	handshake(t, client, up)

	var out bytes.Buffer
	for _, st := range steps {
		if st.fromClient {
			client.send(st.raw + "\n")
			out.WriteString("> ")
			out.Write(up.next())
		} else {
			up.send(st.raw + "\n")
			out.WriteString("< ")
			out.Write(client.next())
		}
		out.WriteByte('\n')
	}
	client.closeSend()
	require.NoError(t, <-done)
	return out.Bytes()
}

// TestGoldenPassThrough proves the transparency contract: every message the
// sidecar does not intercept arrives with the same bytes as in the direct
// run, which is the script itself.
func TestGoldenPassThrough(t *testing.T) {
	steps := readScript(t, filepath.Join("testdata", "passthrough.jsonl"))
	got := runScript(t, steps)

	var direct bytes.Buffer
	for _, st := range steps {
		if st.fromClient {
			direct.WriteString("> ")
		} else {
			direct.WriteString("< ")
		}
		direct.WriteString(st.raw + "\n")
	}
	assert.Equal(t, direct.String(), string(got), "wrapped run differs from the direct run")

	golden := filepath.Join("testdata", "passthrough.golden")
	if *update {
		require.NoError(t, os.WriteFile(golden, got, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))
}
