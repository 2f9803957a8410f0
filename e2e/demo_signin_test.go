package e2e

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/auth"
)

// TestDemoSignInAct plays `mcpwrap demo` and checks its sign-in act: the
// agent is told to sign in, the sign-in happens, the tools appear; also
// while another program holds the redirect port a sidecar of the demo's
// server would take by default.
func TestDemoSignInAct(t *testing.T) {
	tests := []struct {
		name            string
		takeDefaultPort bool
	}{
		{name: "on a quiet machine"},
		{name: "with the default redirect port taken", takeDefaultPort: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.takeDefaultPort {
				ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(auth.RedirectPort("linear")))
				if err != nil {
					t.Skipf("the default redirect port is taken already: %v", err)
				}
				defer ln.Close()
			}
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
		})
	}
}
