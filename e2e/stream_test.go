package e2e

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStreamedGiBResponseThroughASlowClient: a tool result of 1 GiB, far
// over the 64 MiB message limit, reaches a client that reads it slowly,
// whole and byte for byte, while mcpwrap's memory stays small: it relays
// the result as it arrives, and the slow client holds the server back
// rather than mcpwrap buffering for it.
func TestStreamedGiBResponseThroughASlowClient(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 1 GiB")
	}
	self, err := os.Executable()
	require.NoError(t, err)
	c := startRawClient(t, []string{mcpwrapPath, "--name", "huge", "--log-level", "warn",
		"--state-dir", t.TempDir(), "--config", writeBenchConfig(t), "--", self, rawServerArg})

	const size = 1 << 30
	c.send(t, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"huge","arguments":{"bytes":1073741824}}}`+"\n"))
	prefix := []byte(`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"`)
	suffix := []byte(`"}]}}` + "\n")

	// Read at about 256 MiB/s: 4 MiB per 16 ms tick.
	pace := time.NewTicker(16 * time.Millisecond)
	defer pace.Stop()
	pid := c.pid
	peak := 0
	var head, tail []byte
	total := 0
	buf := make([]byte, 64<<10)
	for n := 0; ; {
		m, err := c.out.Read(buf)
		if total < len(prefix) {
			head = append(head, buf[:min(m, len(prefix)-total)]...)
		}
		total += m
		tail = append(tail, buf[:m]...)
		tail = tail[max(0, len(tail)-len(suffix)):]
		if m > 0 && buf[m-1] == '\n' {
			break
		}
		require.NoError(t, err, "after %d bytes", total)
		if n += m; n >= 4<<20 {
			n = 0
			<-pace.C
			if rss, err := procStatusKiB(pid, "VmRSS:"); err == nil {
				peak = max(peak, rss)
			}
		}
	}
	assert.Equal(t, string(prefix), string(head))
	assert.Equal(t, string(suffix), string(tail))
	assert.Equal(t, len(prefix)+size+len(suffix), total, "the whole result, byte for byte")

	hwm, err := procStatusKiB(pid, "VmHWM:")
	require.NoError(t, err)
	t.Logf("1 GiB result through a slow client: mcpwrap's peak RSS %d KiB (sampled %d KiB)", hwm, peak)
	assert.Less(t, hwm, 64<<10, "mcpwrap's peak RSS must stay under 64 MiB")
}
