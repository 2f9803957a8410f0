package middleware

import (
	"bytes"
	"encoding/json"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/internal/tooldef"
)

// catalogState is the upstream's tool catalog as a Session keeps it: the
// definitions of every page as sent, what the client last learned of
// them, and the loads and refreshes that keep it current. Its methods keep
// what belongs together consistent under one acquisition of mu.
//
// Locks: reevaluating is held across a whole re-evaluation (see
// Session.reevaluate), which takes Session.mu and mu in turn; neither is
// held while taking it. mu is never held while taking Session.mu, nor
// taken under it; under mu only the identities cache's own lock is taken.
// verdicts and refreshing are read without any lock: the call path reads
// them.
//
// Its zero value is an empty catalog, not loaded yet; set identities.limit
// before use.
type catalogState struct {
	// verdicts publishes the catalog, and the policy's verdicts on it, to
	// the calls judged without a lock (see Session.callVerdict): replaced
	// under mu when the catalog changes, evaluated by publish.
	verdicts atomic.Pointer[verdicts]
	// refreshing is set while a refresh of the catalog runs: written under
	// mu, read without it on the call path (see Session.catalogStale).
	refreshing atomic.Bool
	// identities caches definitions as tooldef read them; it has its own
	// lock.
	identities identities
	// reevaluating serialises Session.reevaluate.
	reevaluating sync.Mutex

	mu           sync.Mutex
	tools        []json.RawMessage
	index        *tooldef.Index      // the catalog's names, read by the one tool-definition parser
	sums         definitionPositions // hashes of the catalog's definitions, to spot changed ones cheaply
	size         int                 // the size of the catalog's definitions
	known        bool                // a catalog was loaded
	visible      string              // the visible tool set the client last learned
	visibleKnown bool
	locked       int             // locked tools in the catalog
	walkLocked   int             // locked tools on the pages of the client's current tools/list walk
	merges       int             // catalog updates from the client's tools/list pages (mergePage) and changes the upstream announced
	loading      *catalogLoading // the catalog load under way, nil when none (see Session.catalogLoad)
	stale        bool            // a refresh was asked for while one was running
	// keptMerges is merges as of the pages of the catalog a load last
	// kept: a refresh that joined a load ending as the upstream announced a
	// change sees it below merges, and loads again.
	keptMerges int
	// refreshEnded is closed when the refresh under way ends, and
	// refreshErr is how the last one ended (see refreshEnd).
	refreshEnded chan struct{}
	refreshErr   error
	// first is set while a load of the upstream waits for its first
	// catalog, from its handshake on (see Session.firstCatalog): the
	// catalog kept next completes the load. Whoever takes it (keep, or
	// dropFirst when the load fails) publishes the load's status, then
	// closes it; nil when no load waits.
	first chan struct{}
}

// loaded reports whether a catalog was loaded.
func (c *catalogState) loaded() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.known
}

// idle reports whether a catalog is loaded, no load is under way and no
// refresh is pending.
func (c *catalogState) idle() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.known && c.loading == nil && !c.refreshing.Load()
}

// set replaces the catalog with all, as a load that is kept does.
func (c *catalogState) set(all []json.RawMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setLocked(all)
}

// setLocked replaces the catalog; c.mu must be held. The slices it
// replaces are never modified, as views of them may be in use. The verdicts
// it publishes are not evaluated yet: the re-evaluation that follows does
// it.
func (c *catalogState) setLocked(all []json.RawMessage) {
	index := new(tooldef.Index)
	index.Grow(len(all))
	sums := make(definitionPositions, len(all))
	size := 0
	for i, t := range all {
		sum := maphash.Bytes(catalogSeed, t)
		d, err := c.identities.read(sum, t)
		index.Add(t, d, err)
		sums[sum] = i
		size += len(t)
	}
	names := make([]string, len(all))
	for i := range names {
		names[i] = index.Name(i)
	}
	c.tools, c.index, c.sums, c.known = all, index, sums, true
	c.size = size
	c.verdicts.Store(&verdicts{tools: all, index: index, names: names, known: &knownDefinitions{tools: all}})
}

// publish replaces the verdicts snap with snap evaluated (avail, as of the
// policy's version), unless the catalog or its evaluation changed since
// snap was read.
func (c *catalogState) publish(snap *verdicts, avail []Availability, version uint64) {
	c.verdicts.CompareAndSwap(snap, &verdicts{tools: snap.tools, index: snap.index, names: snap.names, known: snap.known, avail: avail, version: version})
}

// mergeCount returns the count of catalog updates so far, for keep.
func (c *catalogState) mergeCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.merges
}

// keep replaces the catalog with all, a load that started when
// mergeCount was merges, and reports true; unless the catalog was updated
// since (the load may hold older definitions than the update), and then
// it keeps nothing and reports false. A kept catalog that completes a load
// of the upstream (see awaitFirst) returns that load's wait, for the
// caller to end.
func (c *catalogState) keep(all []json.RawMessage, merges int) (first chan struct{}, kept bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.merges != merges {
		return nil, false
	}
	c.setLocked(all)
	c.keptMerges = merges
	first, c.first = c.first, nil
	return first, true
}

// awaitFirst records that a load of the upstream, its handshake done,
// waits for its first catalog.
func (c *catalogState) awaitFirst() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.first = make(chan struct{})
}

// dropFirst ends the wait of a load whose first catalog failed, and
// returns it for the caller to close; nil when a catalog was kept since,
// which completed the load.
func (c *catalogState) dropFirst() chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	first := c.first
	c.first = nil
	return first
}

// firstDue returns a channel closed once the load waiting for its first
// catalog has ended, with its status published; nil when no load waits.
func (c *catalogState) firstDue() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.first
}

// startLoad returns the load under way, or a new one, which it records as
// under way, and reports whether it is new: its caller must start it, and
// end it with endLoad.
func (c *catalogState) startLoad() (l *catalogLoading, fresh bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.loading != nil {
		return c.loading, false
	}
	c.loading = &catalogLoading{done: make(chan struct{})}
	return c.loading, true
}

// endLoad ends load l, started by startLoad, with err.
func (c *catalogState) endLoad(l *catalogLoading, err error) {
	c.mu.Lock()
	c.loading = nil
	c.mu.Unlock()
	l.err = err
	close(l.done)
}

// startRefresh counts a change of the catalog the upstream announced and
// reports whether a refresh must start; when one is running already, it
// is marked to run again instead.
func (c *catalogState) startRefresh() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.merges++
	if c.refreshing.Load() {
		c.stale = true
		return false
	}
	c.refreshing.Store(true)
	c.refreshEnded = make(chan struct{})
	return true
}

// refreshEnd returns a channel closed once the refresh under way (or the
// last one) has ended, and a function that then returns how it ended. It
// is how a load waits for the catalog its handshake asked for (see
// Session.firstCatalog).
func (c *catalogState) refreshEnd() (<-chan struct{}, func() error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	end := c.refreshEnded
	if end == nil {
		end = make(chan struct{})
		close(end)
	}
	return end, func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.refreshErr
	}
}

// endRefreshLocked records the end of the refresh under way; c.mu must be
// held.
func (c *catalogState) endRefreshLocked(err error) {
	c.refreshing.Store(false)
	c.stale = false
	c.refreshErr = err
	close(c.refreshEnded)
}

// refreshed ends one round of the refresh startRefresh began, which ended
// with err, and reports whether the refresh is over: it is not when a
// change was announced since it began, or when the catalog the round kept
// predates a change announced before.
func (c *catalogState) refreshed(err error) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stale && (err != nil || c.keptMerges == c.merges) {
		c.endRefreshLocked(err)
		return true
	}
	c.stale = false
	return false
}

// abandonRefresh ends the refresh startRefresh began without running it.
func (c *catalogState) abandonRefresh() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.endRefreshLocked(errSessionEnded)
}

// lockedTools returns how many tools of the catalog are locked, as of the
// last re-evaluation.
func (c *catalogState) lockedTools() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.locked
}

// walkPage counts locked tools of a tools/list page the client is shown
// (the last of its walk when last is set, which ends the walk) and returns
// how many tools are locked as far as the client can tell: on the pages of
// its walk so far, which may be shown before the catalog is loaded, or in
// the catalog, whichever is more.
func (c *catalogState) walkPage(locked int, last bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.walkLocked += locked
	n := max(c.walkLocked, c.locked)
	if last {
		c.walkLocked = 0
	}
	return n
}

// setVisible records sig, the visible tool set, and locked, the count of
// locked tools, as of a re-evaluation, and reports whether the visible set
// changed from one recorded before.
func (c *catalogState) setVisible(sig string, locked int) (changed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	prev, known := c.visible, c.visibleKnown
	c.visible, c.visibleKnown, c.locked = sig, true, locked
	return known && prev != sig
}

// pageMerge is what mergePage did with a tools/list page.
type pageMerge struct {
	all     []json.RawMessage // the catalog after the merge when it changed, else nil
	snap    *verdicts         // the catalog as published after the merge; nil when none is loaded
	pos     []int32           // the position in it of each definition of the page, -1 for one it could not take
	dropped bool              // a definition of the page was not merged for limit
}

// mergePage merges the tool definitions of a tools/list page into the
// loaded catalog, within limit bytes, and counts a change as an update.
// It takes the positions guide found in the catalog, when that is still
// the catalog, and looks up the others by their hash. It does nothing
// before a catalog is loaded.
func (c *catalogState) mergePage(page [][]byte, guide pageGuide, limit int) pageMerge {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.known {
		return pageMerge{} // the first load is under way
	}
	const over = -2 // not merged: the catalog would pass limit
	pos := make([]int32, len(page))
	var all []json.RawMessage
	var replaced map[int]bool // positions whose definition this page replaced
	size, changed := c.size, false
	at := guide.at
	if guide.snap == nil || guide.snap.index != c.index {
		at = nil // the catalog changed since
	}
	for k, t := range page {
		if at != nil && at[k] >= 0 {
			pos[k] = int32(at[k])
			continue
		}
		sum := maphash.Bytes(catalogSeed, t)
		if p, ok := c.sums[sum]; ok {
			pos[k] = int32(p)
			continue
		}
		pos[k] = -1
		if all == nil {
			all = slices.Clone(c.tools)
		}
		// A changed definition replaces the one trusted under its name;
		// anything else, refused definitions included, is added, so that
		// every name it claims is refused. A second changed definition of
		// one name is added too: the page claims the name twice. One the
		// catalog cannot take is neither: it is not shown, and a call is
		// judged by the catalog.
		i, replace := -1, false
		if d, err := c.identities.read(sum, t); err == nil {
			i, replace, _ = c.index.Lookup(d.Name)
			replace = replace && !replaced[i]
		}
		grown := size + len(t)
		if replace {
			grown -= len(all[i])
		}
		if grown > limit {
			pos[k] = over
			continue
		}
		size, changed = grown, true
		if replace {
			all[i] = bytes.Clone(t)
			if replaced == nil {
				replaced = make(map[int]bool)
			}
			replaced[i] = true
		} else {
			all = append(all, bytes.Clone(t))
		}
	}
	dropped := slices.Contains(pos, over)
	if changed {
		c.setLocked(all)
		c.merges++
	}
	for k, t := range page {
		if pos[k] == over {
			pos[k] = -1
		} else if changed { // a definition found before the merge may have been replaced
			p, ok := c.sums[maphash.Bytes(catalogSeed, t)]
			pos[k] = int32(p)
			if !ok {
				pos[k] = -1
			}
		}
	}
	if !changed {
		all = nil
	}
	return pageMerge{all: all, snap: c.verdicts.Load(), pos: pos, dropped: dropped}
}

// verdicts is the catalog as last loaded, immutable once published (see
// catalogState.verdicts): what a tools/call is judged by without a lock. avail
// is nil until the catalog is evaluated under a VersionedPolicy, then holds
// the verdict on each definition as of the policy's version.
type verdicts struct {
	tools   []json.RawMessage
	index   *tooldef.Index // never nil; identifies the catalog
	names   []string       // the trusted name of each definition (see tooldef.Index.Name)
	known   *knownDefinitions
	avail   []Availability
	version uint64
}

// knownDefinitions are the definitions of a catalog as framing recognises
// them in a tools/list page, checked on first use rather than under the
// lock that sets the catalog.
type knownDefinitions struct {
	once  sync.Once
	tools []json.RawMessage
	known *framing.Known
}

// knownDefinitions returns the definitions of the catalog for
// framing.MembersSplitKnown; nil when no catalog is loaded.
func (v *verdicts) knownDefinitions() *framing.Known {
	if v == nil {
		return nil
	}
	k := v.known
	k.once.Do(func() { k.known = framing.NewKnown(k.tools) })
	return k.known
}

// A catalogLoading is a load of the catalog under way; err is set before
// done is closed.
type catalogLoading struct {
	done chan struct{}
	err  error
}

// identities caches what tooldef read from tool definitions, by their hash
// under catalogSeed, so that each definition is read once rather than on
// every tools/list page. It holds at most maxIdentities entries, and names
// and descriptions of at most limit bytes. It is safe for concurrent use;
// its lock is never held while taking another.
type identities struct {
	limit int // set before use
	mu    sync.Mutex
	m     map[uint64]identity
	bytes int // of the names and descriptions in m
}

type identity struct {
	def tooldef.Def
	err error
}

// maxIdentities bounds the identities cache; past it, it starts afresh.
const maxIdentities = 1 << 16

// read returns what tooldef.Identify reads from raw, whose hash is sum.
func (c *identities) read(sum uint64, raw []byte) (tooldef.Def, error) {
	c.mu.Lock()
	id, ok := c.m[sum]
	c.mu.Unlock()
	if ok {
		return id.def, id.err
	}
	d, err := tooldef.Identify(raw)
	size := len(d.Name) + len(d.Description)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxIdentities || c.bytes+size > c.limit {
		c.m, c.bytes = make(map[uint64]identity), 0
	}
	if size <= c.limit {
		c.m[sum] = identity{d, err}
		c.bytes += size
	}
	c.mu.Unlock()
	return d, err
}

// warm reads the definitions the cache lacks, so that a caller holding
// the catalog's lock afterwards does not read them under it.
func (c *identities) warm(all []json.RawMessage) {
	for _, t := range all {
		c.read(maphash.Bytes(catalogSeed, t), t)
	}
}

// definitionPositions maps the hash (under catalogSeed) of each definition
// of the catalog to its position.
type definitionPositions map[uint64]int

// catalogSeed keys the hashes that spot a changed definition.
var catalogSeed = maphash.MakeSeed()
