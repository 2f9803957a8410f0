package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/gate"
	"github.com/mcpwrap/mcpwrap/internal/policy"
	"github.com/mcpwrap/mcpwrap/internal/state"
)

// countingStore counts the store operations a gate makes.
type countingStore struct {
	state.Store
	ops atomic.Int64
}

func (c *countingStore) Load(ctx context.Context, server string) (*state.Server, error) {
	c.ops.Add(1)
	return c.Store.Load(ctx, server)
}

func (c *countingStore) Update(ctx context.Context, server string, fn func(*state.Server) error) error {
	c.ops.Add(1)
	return c.Store.Update(ctx, server, fn)
}

// BenchmarkVerdict: a tool call's verdict (the gate judging the catalog a
// call is checked against) costs the same on the PostgreSQL store as on the
// file store, and makes no store operation: verdicts come from memory,
// refreshed by notifications (issue 25). store-ops/op is the number of
// Load and Update calls per verdict; it must be 0.
func BenchmarkVerdict(b *testing.B) {
	catalog := make([]json.RawMessage, 50)
	for i := range catalog {
		catalog[i] = def(fmt.Sprintf("tool_%02d", i), "does a thing")
	}
	eval, err := policy.NewEvaluator(policy.Options{})
	require.NoError(b, err)
	for _, tc := range []struct {
		name string
		open func(b *testing.B) state.Store
	}{
		{name: "file", open: func(b *testing.B) state.Store { return state.Open(b.TempDir(), nil) }},
		{name: "postgres", open: func(b *testing.B) state.Store {
			if cluster == nil {
				b.Skip("no PostgreSQL")
			}
			dsn, err := cluster.CreateDB(b.Context())
			require.NoError(b, err)
			s, err := Open(dsn, Options{})
			require.NoError(b, err)
			b.Cleanup(s.Close)
			return s
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			store := &countingStore{Store: tc.open(b)}
			g := gate.New("bench", eval, store, nil)
			g.Reload(b.Context())
			g.CatalogSeen(b.Context(), catalog) // the tofu baseline: every tool callable
			require.Equal(b, "callable", verdicts(g.Evaluate(catalog))[0])
			before := store.ops.Load()
			for b.Loop() {
				_ = g.Evaluate(catalog)
			}
			b.ReportMetric(float64(store.ops.Load()-before)/float64(b.N), "store-ops/op")
			require.Equal(b, before, store.ops.Load(), "a verdict made a store operation")
		})
	}
}
