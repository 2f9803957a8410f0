package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTyposAreCaught: a first word one edit from a subcommand that names no program is told
// as a typo (exit 2), instead of being started as the server to wrap while mcpwrap waits
// silently for a client on stdin.
func TestTyposAreCaught(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{name: "instal", args: []string{"instal"}, want: `unknown command "instal"; did you mean "install"?`},
		{name: "doctr", args: []string{"doctr", "--client", "all"}, want: `unknown command "doctr"; did you mean "doctor"?`},
		{name: "tols list", args: []string{"tols", "list"}, want: `unknown command "tols"; did you mean "tools"?`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			// stdin stays open, as a client's pipe would: a wrapped "instal" would wait on it.
			p := startProcess(ctx, t, processOptions{Env: mcpwrapEnv(t, `{}`), PipeStdin: true}, mcpwrapPath, tt.args...)
			_ = p.Wait(ctx)
			require.NoError(t, ctx.Err(), "mcpwrap %v waited instead of saying it is a typo", tt.args)
			assert.Equal(t, 2, p.Cmd.ProcessState.ExitCode())
			assert.Contains(t, p.Stderr(), tt.want)
		})
	}
}
