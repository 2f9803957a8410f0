package middleware

import (
	"strconv"
	"testing"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReqTable(t *testing.T) {
	tests := []struct {
		name   string
		keys   []string // framing.IDKey of ids put in this order
		inRing int      // how many of them the ring holds
	}{
		{name: "integers counting up sit in the ring", keys: []string{"n1", "n2", "n3", "n1024"}, inRing: 4},
		{name: "an integer whose slot is taken goes to the map", keys: []string{"n5", "n1029", "n-1019"}, inRing: 1},
		{name: "negative integers", keys: []string{"n-1", "n-2", "n1023"}, inRing: 2},
		{name: "the largest integers a key spells", keys: []string{"n999999999999999", "n-999999999999999"}, inRing: 2},
		{name: "strings and other keys go to the map", keys: []string{`s"a"`, "sn1", "n0123", "n-0", "n1.5", "n1234567890123456", "n"}, inRing: 0},
		{name: "a string key beside the integer it spells", keys: []string{"n7", "s7"}, inRing: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tab reqTable
			recs := make(map[string]*inflight)
			for _, key := range tt.keys {
				r := &inflight{key: key}
				tab.put(key, r)
				recs[key] = r
			}
			assert.Equal(t, tt.inRing, tab.inRing)
			for i, key := range tt.keys {
				require.Equal(t, len(tt.keys)-i, tab.len())
				for _, other := range tt.keys[i:] {
					got, ok := lookup(&tab, other)
					assert.True(t, ok, "get %s", other)
					assert.Same(t, recs[other], got, "get %s", other)
					got, ok = lookup(&tab, []byte(other))
					assert.True(t, ok, "lookup %s", other)
					assert.Same(t, recs[other], got, "lookup %s", other)
				}
				var all []*inflight
				for r := range tab.all {
					all = append(all, r)
				}
				assert.Len(t, all, len(tt.keys)-i)
				tab.remove(recs[key])
				_, ok := lookup(&tab, key)
				assert.False(t, ok, "%s removed", key)
			}
			assert.Zero(t, tab.len())
			assert.Zero(t, tab.inRing)
		})
	}
}

func TestReqTableAllMayRemove(t *testing.T) {
	var tab reqTable
	for _, key := range []string{"n1", "n1025", `s"x"`, "n2"} {
		tab.put(key, &inflight{key: key})
	}
	n := 0
	for r := range tab.all {
		tab.remove(r)
		n++
	}
	assert.Equal(t, 4, n)
	assert.Zero(t, tab.len())
}

// FuzzNumKey holds numKey to one integer per key and one key per integer,
// and to the ids framing.IDKey gives the same key: the ring must never
// take two ids for one, nor one id for two.
func FuzzNumKey(f *testing.F) {
	for _, seed := range []string{"1", "-1", "0", "-0", "007", "1.0", "1e2", "123456789012345", "1234567890123456", `"1"`, `"n1"`, "9007199254740993"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, id []byte) {
		key := framing.IDKey(id)
		n, ok := numKey(key)
		nb, okb := numKey([]byte(key))
		require.Equal(t, ok, okb)
		require.Equal(t, n, nb)
		if !ok {
			return
		}
		require.Equal(t, "n"+strconv.FormatInt(n, 10), key, "one key per integer")
		require.Equal(t, key, framing.IDKey([]byte(strconv.FormatInt(n, 10))), "an id with this key is that integer")
	})
}
