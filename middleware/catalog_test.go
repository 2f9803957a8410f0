package middleware

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// This file tests catalogState on its own: what it keeps consistent, as
// the Session relies on it.

func newCatalogState(limit int) *catalogState {
	c := &catalogState{}
	c.identities.limit = limit
	return c
}

func defs(tools ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(tools))
	for i, t := range tools {
		out[i] = json.RawMessage(t)
	}
	return out
}

func pageOf(tools ...string) [][]byte {
	out := make([][]byte, len(tools))
	for i, t := range tools {
		out[i] = []byte(t)
	}
	return out
}

func TestCatalogStateLoaded(t *testing.T) {
	c := newCatalogState(1 << 20)
	assert.False(t, c.loaded(), "zero value: not loaded")
	assert.False(t, c.idle(), "not idle before a catalog is loaded")
	assert.Nil(t, c.verdicts.Load(), "nothing published before a load")

	c.set(defs(tool("a", "x"), tool("b", "y")))
	assert.True(t, c.loaded())
	assert.True(t, c.idle())
	snap := c.verdicts.Load()
	require.NotNil(t, snap)
	assert.Equal(t, []string{"a", "b"}, snap.names)
	assert.Nil(t, snap.avail, "published unevaluated")
	i, known, _ := snap.index.Lookup("b")
	assert.True(t, known)
	assert.Equal(t, 1, i)

	l, fresh := c.startLoad()
	require.True(t, fresh)
	assert.False(t, c.idle(), "a load is under way")
	c.endLoad(l, nil)
	assert.True(t, c.startRefresh())
	assert.False(t, c.idle(), "a refresh is pending")
}

func TestCatalogStateLoadsAreJoined(t *testing.T) {
	c := newCatalogState(1 << 20)
	first, fresh := c.startLoad()
	require.True(t, fresh)
	joined, fresh := c.startLoad()
	assert.False(t, fresh, "a load under way is joined")
	assert.Same(t, first, joined)

	c.endLoad(first, errLoadForTest)
	select {
	case <-first.done:
	default:
		t.Fatal("endLoad did not end the load")
	}
	assert.ErrorIs(t, first.err, errLoadForTest)

	next, fresh := c.startLoad()
	assert.True(t, fresh, "a load that ended is never joined")
	assert.NotSame(t, first, next)
	c.endLoad(next, nil)
}

func TestCatalogStateKeep(t *testing.T) {
	tests := []struct {
		name     string
		between  func(c *catalogState) // between the load's start and its end
		wantKept bool
	}{
		{name: "nothing changed", between: func(*catalogState) {}, wantKept: true},
		{name: "the upstream announced a change", between: func(c *catalogState) { c.startRefresh() }, wantKept: false},
		{
			name:     "a page merged a definition",
			between:  func(c *catalogState) { c.mergePage(pageOf(tool("n", "new")), pageGuide{}, 1<<20) },
			wantKept: false,
		},
		{
			name:     "a page showed nothing new",
			between:  func(c *catalogState) { c.mergePage(pageOf(tool("a", "x")), pageGuide{}, 1<<20) },
			wantKept: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCatalogState(1 << 20)
			c.set(defs(tool("a", "x")))
			merges := c.mergeCount()
			tt.between(c)
			loaded := defs(tool("a", "x"), tool("b", "y"))
			_, kept := c.keep(loaded, merges)
			assert.Equal(t, tt.wantKept, kept)
			if tt.wantKept {
				assert.Equal(t, loaded, c.verdicts.Load().tools)
			} else {
				assert.NotEqual(t, loaded, c.verdicts.Load().tools, "not kept")
			}
		})
	}
}

func TestCatalogStateRefresh(t *testing.T) {
	tests := []struct {
		name string
		// run drives the refresh and returns what refreshed reported on
		// each round.
		run  func(c *catalogState) []bool
		want []bool
	}{
		{
			name: "one round that kept a catalog",
			run: func(c *catalogState) []bool {
				c.keep(defs(tool("a", "x")), c.mergeCount())
				return []bool{c.refreshed(nil)}
			},
			want: []bool{true},
		},
		{
			name: "a round that failed ends it",
			run:  func(c *catalogState) []bool { return []bool{c.refreshed(errLoadForTest)} },
			want: []bool{true},
		},
		{
			name: "a round that kept a catalog read before the change runs again",
			run: func(c *catalogState) []bool {
				c.keep(defs(tool("a", "x")), c.mergeCount()-1)
				return []bool{c.refreshed(nil)}
			},
			want: []bool{false},
		},
		{
			name: "a change announced during a round runs one more",
			run: func(c *catalogState) []bool {
				joined := c.startRefresh()
				first := c.refreshed(errLoadForTest)
				c.keep(defs(tool("a", "x")), c.mergeCount())
				return []bool{joined, first, c.refreshed(nil)}
			},
			want: []bool{false, false, true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCatalogState(1 << 20)
			require.True(t, c.startRefresh())
			assert.True(t, c.refreshing.Load())
			got := tt.run(c)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, !got[len(got)-1], c.refreshing.Load(), "refreshing until refreshed reports the end")
		})
	}
}

func TestCatalogStateAbandonRefresh(t *testing.T) {
	c := newCatalogState(1 << 20)
	require.True(t, c.startRefresh())
	require.False(t, c.startRefresh())
	c.abandonRefresh()
	assert.False(t, c.refreshing.Load())
	assert.True(t, c.startRefresh(), "a refresh starts again once abandoned")
	assert.True(t, c.refreshed(errLoadForTest), "no round left over from the abandoned one")
}

var errLoadForTest = errors.New("load failed")

func TestCatalogStateWalkPage(t *testing.T) {
	type page struct {
		locked int
		last   bool
	}
	tests := []struct {
		name          string
		catalogLocked int // as of the last re-evaluation
		pages         []page
		want          []int
	}{
		{name: "one page", pages: []page{{locked: 2, last: true}}, want: []int{2}},
		{name: "a walk adds up its pages", pages: []page{{locked: 1}, {locked: 2}, {locked: 0, last: true}}, want: []int{1, 3, 3}},
		{name: "the last page ends the walk", pages: []page{{locked: 2, last: true}, {locked: 1, last: true}}, want: []int{2, 1}},
		{name: "the catalog's count when larger", catalogLocked: 5, pages: []page{{locked: 2}, {locked: 4, last: true}}, want: []int{5, 6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCatalogState(1 << 20)
			c.setVisible("", tt.catalogLocked)
			var got []int
			for _, p := range tt.pages {
				got = append(got, c.walkPage(p.locked, p.last))
			}
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.catalogLocked, c.lockedTools(), "a walk does not change the catalog's count")
		})
	}
}

func TestCatalogStateSetVisible(t *testing.T) {
	tests := []struct {
		name string
		sets []string
		want []bool
	}{
		{name: "the first set is no change", sets: []string{"a"}, want: []bool{false}},
		{name: "the same set", sets: []string{"a", "a"}, want: []bool{false, false}},
		{name: "another set", sets: []string{"a", "a\x00b", "a"}, want: []bool{false, true, true}},
		{name: "an empty set is a set", sets: []string{"", "a"}, want: []bool{false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCatalogState(1 << 20)
			var got []bool
			for i, sig := range tt.sets {
				got = append(got, c.setVisible(sig, i))
			}
			assert.Equal(t, tt.want, got)
			assert.Equal(t, len(tt.sets)-1, c.lockedTools())
		})
	}
}

func TestCatalogStateMergePage(t *testing.T) {
	a, b := tool("a", "x"), tool("b", "y")
	tests := []struct {
		name        string
		catalog     []json.RawMessage // nil: none loaded
		page        [][]byte
		limit       int
		wantTools   []json.RawMessage // the catalog afterwards
		wantPos     []int32
		wantChanged bool
		wantDropped bool
	}{
		{
			name:  "before a catalog is loaded",
			page:  pageOf(a),
			limit: 1 << 20,
		},
		{
			name:      "definitions the catalog holds",
			catalog:   defs(a, b),
			page:      pageOf(b, a),
			limit:     1 << 20,
			wantTools: defs(a, b),
			wantPos:   []int32{1, 0},
		},
		{
			name:        "a new definition is added",
			catalog:     defs(a),
			page:        pageOf(a, b),
			limit:       1 << 20,
			wantTools:   defs(a, b),
			wantPos:     []int32{0, 1},
			wantChanged: true,
		},
		{
			name:        "a changed definition replaces its name's",
			catalog:     defs(a, b),
			page:        pageOf(tool("a", "changed")),
			limit:       1 << 20,
			wantTools:   defs(tool("a", "changed"), b),
			wantPos:     []int32{0},
			wantChanged: true,
		},
		{
			name:        "past the limit a definition is not merged",
			catalog:     defs(a),
			page:        pageOf(b),
			limit:       len(a) + len(b) - 1,
			wantTools:   defs(a),
			wantPos:     []int32{-1},
			wantDropped: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCatalogState(1 << 20)
			if tt.catalog != nil {
				c.set(tt.catalog)
			}
			merges := c.mergeCount()
			m := c.mergePage(tt.page, pageGuide{}, tt.limit)
			assert.Equal(t, tt.wantPos, m.pos)
			assert.Equal(t, tt.wantDropped, m.dropped)
			if tt.catalog == nil {
				assert.Equal(t, pageMerge{}, m)
				assert.False(t, c.loaded(), "a page does not load a catalog")
				return
			}
			require.NotNil(t, m.snap)
			assert.Same(t, c.verdicts.Load(), m.snap, "the catalog as published")
			assert.Equal(t, tt.wantTools, m.snap.tools)
			if tt.wantChanged {
				assert.Equal(t, tt.wantTools, m.all)
				assert.Equal(t, merges+1, c.mergeCount(), "a change counts as an update")
			} else {
				assert.Nil(t, m.all)
				assert.Equal(t, merges, c.mergeCount())
			}
		})
	}
}

func TestCatalogStatePublish(t *testing.T) {
	c := newCatalogState(1 << 20)
	c.set(defs(tool("a", "x")))
	snap := c.verdicts.Load()
	avail := []Availability{{InScope: true}}
	c.publish(snap, avail, 7)
	got := c.verdicts.Load()
	assert.Equal(t, avail, got.avail)
	assert.Equal(t, uint64(7), got.version)
	assert.Same(t, snap.index, got.index, "the same catalog")

	c.set(defs(tool("b", "y")))
	replaced := c.verdicts.Load()
	c.publish(got, []Availability{{InScope: true, Status: "disabled_user"}}, 8)
	assert.Same(t, replaced, c.verdicts.Load(), "verdicts on a replaced catalog are not published")
}

// TestCatalogStateReadsWithoutLock: the call path's reads (verdicts,
// refreshing, and the catalog a snapshot holds) race with nothing while
// the catalog changes (under -race).
func TestCatalogStateReadsWithoutLock(t *testing.T) {
	c := newCatalogState(1 << 20)
	c.set(defs(tool("a", "x")))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			snap := c.verdicts.Load()
			if i, known, _ := snap.index.Lookup("a"); known {
				_ = len(snap.tools[i]) // published definitions are never modified
			}
			_ = c.refreshing.Load()
		}
	}()
	for i := range 100 {
		c.startRefresh()
		c.mergePage(pageOf(tool("a", string(rune('a'+i%26)))), pageGuide{}, 1<<20)
		c.publish(c.verdicts.Load(), []Availability{{InScope: true}}, uint64(i))
		c.refreshed(nil)
	}
	close(stop)
	wg.Wait()
}
