package doctor

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRPCClientCloseWaitsForItsReader(t *testing.T) {
	t.Parallel()
	ours, theirs := pipe()
	t.Cleanup(func() { _ = theirs.Close() })
	c := newRPCClient(ours)

	c.close()
	select {
	case <-c.done:
	default:
		t.Fatal("close returned while the reader still ran")
	}
	_, err := c.call(t.Context(), "ping", nil)
	assert.Error(t, err, "a call after close fails at once")
}
