package doctor

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteTable(t *testing.T) {
	t.Parallel()
	results := []Result{
		{Name: "filesystem", Client: "claude-desktop", Transport: "stdio", Status: "available", Attempts: 1,
			ClientProtocol: "2025-11-25", ServerProtocol: "2025-11-25",
			LoadTime: 412 * time.Millisecond, Tools: 12, Locked: 3, LockedBy: map[string]int{"pending_approval": 1, "disabled_by_config": 2}},
		{Name: "remote", Transport: "http", Status: "available", Attempts: 1,
			ClientProtocol: "2025-11-25", ServerProtocol: "2026-07-28", LoadTime: 80 * time.Millisecond, Tools: 2},
		{Name: "slow", Client: "claude-desktop", Transport: "stdio", Status: "available", Attempts: 1,
			ClientProtocol: "2025-11-25", ServerProtocol: "2025-11-25",
			LoadTime: 2345 * time.Millisecond, Tools: 1, Slow: true, Hint: "Loaded in 2.345s, after ready_timeout (500ms)"},
		{Name: "missing", Client: "cursor", Transport: "stdio", Status: "permanent", Attempts: 1, LoadTime: 2 * time.Millisecond,
			Error: `cannot start "npx": command not found`, Hint: "Use a full path to the command; GUI apps get a minimal PATH"},
		{Name: "api", Transport: "http", Status: "denied", Attempts: 1, Error: "HTTP 401 Unauthorized"},
	}
	var buf bytes.Buffer
	require.NoError(t, WriteTable(&buf, results))
	want := `SERVER      CLIENT          TRANSPORT  STATUS     PROTOCOL                  ATTEMPTS  LOAD   TOOLS
filesystem  claude-desktop  stdio      available  2025-11-25                1         412ms  12 (3 locked: 2 disabled_by_config, 1 pending_approval)
remote      -               http       available  2025-11-25 -> 2026-07-28  1         80ms   2
slow        claude-desktop  stdio      available  2025-11-25                1         2.3s   1
missing     cursor          stdio      permanent  -                         1         2ms    -
api         -               http       denied     -                         1         -      -

slow (available)
  fix: Loaded in 2.345s, after ready_timeout (500ms).

missing (permanent): cannot start "npx": command not found
  fix: Use a full path to the command; GUI apps get a minimal PATH.

api (denied): HTTP 401 Unauthorized

2 of 5 server(s) not available.
`
	assert.Equal(t, want, buf.String())
}

func TestSummary(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "No servers to check.", summary(nil))
	assert.Equal(t, "All 2 server(s) available.", summary([]Result{{Status: "available"}, {Status: "available"}}))
}
