package gate

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpwrap/mcpwrap/internal/policy"
	"github.com/stretchr/testify/assert"
)

// TestGateToolCacheIsBoundedBetweenCatalogs is an attack on "memory stays
// bounded": the parsed-definition cache was keyed by every definition ever
// evaluated and reset only when a catalog was recorded, so definitions
// evaluated in between (tools/list pages that never become the catalog, a
// call's bare name for each unknown tool a client calls) grew it without
// bound. Past its byte bound it starts afresh.
func TestGateToolCacheIsBoundedBetweenCatalogs(t *testing.T) {
	g := newGate(t, policy.Options{Approval: policy.ApprovalOff}, &memStore{})
	g.cacheLimit = 64 << 10
	desc := strings.Repeat("d", 1<<10)
	for i := range 1000 {
		avail := g.Evaluate([]json.RawMessage{raw(fmt.Sprintf("t%d", i), desc)})
		assert.True(t, avail[0].Callable(), "evaluated as before")
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	size := 0
	for key, tool := range g.tools {
		size += len(key) + len(tool.Name) + len(tool.Hash)
	}
	assert.LessOrEqual(t, size, 64<<10)
	assert.Equal(t, size, g.cacheBytes, "the bytes are counted as they are")
}
