package middleware

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/framing"
)

// modelReq is what TestTrackerAgainstAModel expects the tracker to hold
// of a client request, by its framing.IDKey.
type modelReq struct {
	id     string // as the client sent it
	method string
	link   *link
	listen bool // kept by keepListen
	ended  bool // cancelled or expired, its answer still to come
	drop   bool // expired: the upstream's answer is late
}

// handedOut is an id the tracker handed out, with what it must go on
// reading: records are reused, and one that was handed out must not be.
type handedOut struct {
	id   []byte
	want string
	by   string
}

// TestTrackerAgainstAModel runs random sequences of every way a request is
// tracked and taken, with ids that share a ring slot (n, n+1024, n-1024),
// negative ones, spellings of one id, strings, and one too long for the
// record's own buffer, against a model of what each must return: every
// request is taken once, by the first taker, and an id handed out keeps
// its bytes whatever is tracked later.
func TestTrackerAgainstAModel(t *testing.T) {
	ids := []string{"1", "1.0", "1025", "-1023", "2049", "2", "1023", "-1", "0", "-0",
		`"a"`, `"b"`, `"` + strings.Repeat("y", 40) + `"`, `"` + strings.Repeat("x", 100) + `"`}
	methods := []string{"tools/call", "subscriptions/listen", "ping"}
	const limit = 5
	for seed := range uint64(2000) {
		rng := rand.New(rand.NewPCG(seed, 0))
		var steps []string
		fatalf := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d: %s\nsteps: %v", seed, fmt.Sprintf(format, args...), steps)
		}
		model := make(map[string]*modelReq)
		var handed []handedOut
		clock := &fakeClock{}
		timeout := time.Duration(rng.IntN(2)) * time.Second
		tr := newTracker(timeout, clock.afterFunc, func(r *inflight) {
			m := model[framing.IDKey(r.id)]
			if m == nil || m.ended {
				fatalf("%s expired, not in flight", r.id)
			}
			m.ended, m.drop = true, true
			handed = append(handed, handedOut{r.id, m.id, "expired"})
		})
		links := []*link{{}, {}}
		closed, stopped := false, false
		live := func() int {
			n := 0
			for _, m := range model {
				if !m.ended {
					n++
				}
			}
			return n
		}
		for range 80 {
			id := ids[rng.IntN(len(ids))]
			key := framing.IDKey([]byte(id))
			switch rng.IntN(12) {
			case 0, 1, 2:
				l := links[rng.IntN(len(links))]
				var envs []framing.Envelope
				for range 1 + rng.IntN(2) {
					env := req(ids[rng.IntN(len(ids))], methods[rng.IntN(len(methods))])
					if rng.IntN(2) == 0 {
						env.ProgressToken = []byte(ids[rng.IntN(len(ids))])
					}
					envs = append(envs, env)
				}
				steps = append(steps, fmt.Sprintf("track %d", len(envs)))
				refused, gone := tr.track(l, envs, limit)
				if closed || l.calls.retired {
					if !gone {
						fatalf("tracked on a dead link")
					}
					continue
				}
				want, seen := refusal(""), make(map[string]bool)
				for _, env := range envs {
					k := framing.IDKey(env.ID)
					if model[k] != nil || seen[k] {
						want = refusedIDInUse
					}
					seen[k] = true
				}
				if want == "" && live()+len(envs) > limit {
					want = refusedFull
				}
				if gone || refused != want {
					fatalf("track: refused %q, gone %v; want %q", refused, gone, want)
				}
				if want == "" {
					for _, env := range envs {
						model[framing.IDKey(env.ID)] = &modelReq{id: string(env.ID), method: env.Method, link: l}
					}
				}
			case 3, 4:
				by := rng.IntN(2) == 0
				steps = append(steps, fmt.Sprintf("answered(by %v) %s", by, id))
				var method string
				var clientID []byte
				var late bool
				if by {
					method, clientID, late = tr.answeredBy([]byte(id))
				} else {
					method, late = tr.answered([]byte(id))
				}
				var want modelReq
				if m := model[key]; m != nil {
					want = *m
					delete(model, key)
					if by {
						handed = append(handed, handedOut{clientID, m.id, "answeredBy"})
					}
				}
				if method != want.method || late != want.drop {
					fatalf("answered %s: %q, late %v; want %q, late %v", id, method, late, want.method, want.drop)
				}
			case 5:
				steps = append(steps, "untrack "+id)
				want := ""
				if m := model[key]; m != nil && !m.ended {
					want = m.method
					delete(model, key)
				}
				if method := tr.untrack([]byte(id)); method != want {
					fatalf("untrack %s: %q; want %q", id, method, want)
				}
			case 6:
				steps = append(steps, "cancelled "+id)
				tr.cancelled([]byte(id))
				if m := model[key]; m != nil && !m.ended {
					m.ended, m.listen = true, false
				}
			case 7:
				var l *link
				if rng.IntN(8) != 0 {
					l = links[rng.IntN(len(links))]
				}
				steps = append(steps, fmt.Sprintf("fail %v", l == nil))
				var got, want []string
				for _, id := range tr.fail(l) {
					got = append(got, string(id))
					handed = append(handed, handedOut{id, string(id), "fail"})
				}
				for k, m := range model {
					switch {
					case m.ended && (l == nil || m.link == l):
						delete(model, k)
					case !m.ended && (l == nil || m.link == l && !m.listen):
						want = append(want, m.id)
						delete(model, k)
					}
				}
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					fatalf("fail: %v; want %v", got, want)
				}
				if l == nil {
					closed = true
				} else {
					links[slices.Index(links, l)] = &link{} // the next connection
				}
			case 8:
				steps = append(steps, "keepListen "+id)
				tr.keepListen([]byte(id), []byte(id), 100, 1<<20)
				if m := model[key]; m != nil && !m.ended {
					m.listen = true
				}
			case 9:
				l := links[rng.IntN(len(links))]
				steps = append(steps, "relink")
				tr.relink(l)
				for _, m := range model {
					if !m.ended && m.listen {
						m.link = l
					}
				}
			case 10:
				steps = append(steps, "progressed "+id)
				tr.progressed(key)
			case 11:
				if rng.IntN(4) == 0 {
					steps = append(steps, "stopTimers")
					tr.stopTimers()
					stopped = true
					continue
				}
				steps = append(steps, "fire")
				clock.fire()
				for k, m := range model {
					if timeout > 0 && !stopped && !m.ended && !openEnded(m.method) {
						fatalf("%s outlived its call timer", k)
					}
				}
			}
			if got, want := tr.len(), live(); got != want {
				fatalf("%d in flight; want %d", got, want)
			}
			for _, h := range handed {
				if string(h.id) != h.want {
					fatalf("the id %s handed out is now %q", h.by, h.id)
				}
			}
		}
	}
}
