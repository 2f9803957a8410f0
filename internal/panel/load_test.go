package panel

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bigFixture is 50 servers of 100 tools each, 5,000 in all, with every
// tenth tool of every server changed since it was approved.
func bigFixture(t *testing.T) *fixture {
	var cfg strings.Builder
	cfg.WriteString(`{"servers": {`)
	for s := range 50 {
		if s > 0 {
			cfg.WriteString(",")
		}
		fmt.Fprintf(&cfg, `"server%02d": {"approval": "manual", "tools": {"overrides": {"delete_*": false}}}`, s)
	}
	cfg.WriteString("}}")
	f := newFixture(t, cfg.String())
	for s := range 50 {
		name := fmt.Sprintf("server%02d", s)
		var defs, approved []json.RawMessage
		for i := range 100 {
			tool := fmt.Sprintf("tool_%03d", i)
			if i%25 == 0 {
				tool = fmt.Sprintf("delete_%03d", i)
			}
			desc := fmt.Sprintf("Does thing %d of %s with a description of ordinary length, as servers write them.", i, name)
			def := toolDef(tool, desc, i%2 == 0)
			if i%10 == 3 {
				approved = append(approved, toolDef(tool, desc+" Old wording.", i%2 == 0))
			} else {
				approved = append(approved, def)
			}
			defs = append(defs, def)
		}
		approve(t, f.store, name, approved...)
		record(t, f.store, name, defs...)
	}
	return f
}

// TestPageLoadWith5000Tools measures each page with 50 servers and 5,000
// tools, from the request to the last byte, as a browser's first load
// (no model read shared with another tab).
func TestPageLoadWith5000Tools(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 50 state files")
	}
	f := bigFixture(t)
	user := f.signedIn(t)
	for _, page := range []string{"/approvals", "/server?name=server07", "/signins", "/clients", "/"} {
		var best time.Duration
		var size int
		for range 3 {
			start := time.Now()
			resp, body := do(t, user, http.MethodGet, f.base+page, nil, nil)
			took := time.Since(start)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %.300s", page, body)
			if best == 0 || took < best {
				best, size = took, len(body)
			}
		}
		t.Logf("page %-24s %6d ms %8d bytes", page, best.Milliseconds(), size)
		// A bound a busy 2-core machine keeps: the figure is the log's.
		assert.Less(t, best, 10*time.Second, page)
	}
	_, body := do(t, user, http.MethodGet, f.base+"/approvals", nil, nil)
	assert.Equal(t, 500, strings.Count(body, `class="pending"`), "every changed tool shown")
	_ = context.Background
}

func BenchmarkBuild(b *testing.B) {
	f := bigFixture(&testing.T{})
	b.ResetTimer()
	for b.Loop() {
		f.p.build(context.Background())
	}
}
