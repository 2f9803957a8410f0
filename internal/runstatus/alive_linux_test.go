package runstatus

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAlive(t *testing.T) {
	t.Parallel()
	assert.False(t, Alive(os.Getpid()), "a live process that is not mcpwrap (the test binary) does not count")
	assert.False(t, Alive(1<<30), "no such process")
}

func TestIsMcpwrap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		argv0 string
		want  bool
	}{
		{argv0: "mcpwrap", want: true},
		{argv0: "/usr/local/bin/mcpwrap", want: true},
		{argv0: "/opt/bin/mcpwrap-1.2", want: true},
		{argv0: "/usr/bin/python3", want: false},
		{argv0: "/opt/mcpwrap/bin/node", want: false},
		{argv0: "", want: false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, isMcpwrap(tt.argv0), tt.argv0)
	}
}
