package middleware

// ringSize is how many requests numbered with plain integers a reqTable
// keeps in its ring: a power of two, well past the requests a client keeps
// in flight at once.
const ringSize = 1024

// A reqTable is the tracker's table of client requests in flight, by the
// framing.IDKey of their ids.
//
// It is laid out for the relay's hot path, where one pump tracks a request
// and the other takes it on another core, so that what the two share moves
// between their caches as seldom as it can. Clients number requests with
// integers counting up, so a request whose id is a plain integer n goes in
// the ring at n mod ringSize: a request and those sent just after it share
// a cache line, which crosses once for all of them, and a look-up hashes
// nothing and touches no table header. A request whose slot is taken (its
// ids are not counting up, or over ringSize are in flight), or whose id is
// not a plain integer, goes in a map.
//
// Its zero value is an empty table. It is not safe for concurrent use (the
// tracker's lock guards it).
type reqTable struct {
	ring   [ringSize]*inflight
	inRing int                  // the requests in ring
	nums   map[int64]*inflight  // plain-integer ids whose ring slot was taken
	strs   map[string]*inflight // every other id
}

// numKey returns the integer n a key stands for when it is "n" and n's
// decimal digits, as framing.IDKey spells an integer id of up to 15
// digits. It accepts no other spelling of n (no leading zero, no "-0"), so
// that two keys never stand for one integer.
func numKey[K string | []byte](key K) (int64, bool) {
	if len(key) < 2 || len(key) > 17 || key[0] != 'n' {
		return 0, false
	}
	i, neg := 1, key[1] == '-'
	if neg {
		i++
	}
	digits := len(key) - i
	if digits == 0 || digits > 15 || key[i] == '0' && (digits > 1 || neg) {
		return 0, false
	}
	var n int64
	for ; i < len(key); i++ {
		c := key[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// lookup returns the request of t with key, held as a string or as bytes;
// it allocates nothing. (A function, as a method cannot take a type
// parameter.)
func lookup[K string | []byte](t *reqTable, key K) (*inflight, bool) {
	if n, ok := numKey(key); ok {
		return t.getNum(n)
	}
	r, ok := t.strs[string(key)]
	return r, ok
}

func (t *reqTable) getNum(n int64) (*inflight, bool) {
	if r := t.ring[n&(ringSize-1)]; r != nil && r.num == n {
		return r, true
	}
	if len(t.nums) == 0 {
		return nil, false
	}
	r, ok := t.nums[n]
	return r, ok
}

// put adds r under key, which must not be in the table.
func (t *reqTable) put(key string, r *inflight) {
	n, ok := numKey(key)
	if !ok {
		if t.strs == nil {
			t.strs = make(map[string]*inflight)
		}
		t.strs[key] = r
		return
	}
	r.num, r.isNum = n, true
	if slot := &t.ring[n&(ringSize-1)]; *slot == nil {
		*slot = r
		t.inRing++
		return
	}
	if t.nums == nil {
		t.nums = make(map[int64]*inflight)
	}
	t.nums[n] = r
}

// remove removes r, which is in the table.
func (t *reqTable) remove(r *inflight) {
	if !r.isNum {
		delete(t.strs, r.key)
		return
	}
	n := r.num
	if slot := &t.ring[n&(ringSize-1)]; *slot == r {
		*slot = nil
		t.inRing--
		return
	}
	delete(t.nums, n)
}

// len returns how many requests the table holds.
func (t *reqTable) len() int { return t.inRing + len(t.nums) + len(t.strs) }

// all yields every request in the table. The body may remove the request
// it is given.
func (t *reqTable) all(yield func(*inflight) bool) {
	if t.inRing > 0 {
		for i := range t.ring {
			if r := t.ring[i]; r != nil && !yield(r) {
				return
			}
		}
	}
	for _, r := range t.nums {
		if !yield(r) {
			return
		}
	}
	for _, r := range t.strs {
		if !yield(r) {
			return
		}
	}
}
