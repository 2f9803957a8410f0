package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDemoSignInAct plays `mcpwrap demo` and checks its sign-in act: the
// agent is told to sign in, the sign-in happens, the tools appear.
func TestDemoSignInAct(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, mcpwrapPath, "demo").CombinedOutput()
	require.NoError(t, err, "%s", out)
	act := string(out)
	i := strings.Index(act, "A server that needs you to sign in")
	require.GreaterOrEqual(t, i, 0, "no sign-in act:\n%s", out)
	act = act[i:]
	for _, want := range []string{
		"Server 'linear' needs you to sign in. A browser window has been opened; or run `mcpwrap login linear`.",
		"<- notifications/tools/list_changed",
		"whoami -> you are signed in",
	} {
		assert.Contains(t, act, want)
	}
	assert.Less(t, strings.Index(act, "needs you to sign in"), strings.Index(act, "list_changed"))
}
