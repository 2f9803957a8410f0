package policy

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeUser is a hand-written UserState.
type fakeUser struct {
	disabled map[string]bool
	approved map[string]string
	baseline bool
}

func (u fakeUser) Disabled(tool string) bool       { return u.disabled[tool] }
func (u fakeUser) ApprovedHash(tool string) string { return u.approved[tool] }
func (u fakeUser) Baseline() bool                  { return u.baseline }

func mustEvaluator(t testing.TB, o Options) *Evaluator {
	t.Helper()
	e, err := NewEvaluator(o)
	require.NoError(t, err)
	return e
}

func mustAllow(t testing.TB, s string) AllowList {
	t.Helper()
	a, err := ParseAllowList(s)
	require.NoError(t, err)
	return a
}

func TestEvaluatorStatus(t *testing.T) {
	t.Parallel()
	readFile := Tool{Name: "read_file", ReadOnly: true, Hash: "h-read"}
	writeFile := Tool{Name: "write_file", Hash: "h-write"}
	approvedBoth := fakeUser{baseline: true, approved: map[string]string{"read_file": "h-read", "write_file": "h-write"}}
	tests := []struct {
		name        string
		opts        Options
		tool        Tool
		user        UserState
		userErr     error
		want        Status
		wantInScope bool
	}{
		{name: "zero options, fresh state", tool: writeFile, want: Callable, wantInScope: true},
		{name: "server disabled", opts: Options{ServerDisabled: true}, tool: readFile, user: approvedBoth, want: ServerDisabled, wantInScope: true},
		{
			name: "server disabled beats config and store error",
			opts: Options{ServerDisabled: true, Rules: Rules{Default: DefaultNone}}, tool: readFile, userErr: errStore,
			want: ServerDisabled, wantInScope: true,
		},
		{name: "config default none", opts: Options{Rules: Rules{Default: DefaultNone}}, tool: readFile, want: DisabledByConfig, wantInScope: true},
		{
			name: "config denied and user disabled",
			opts: Options{Rules: Rules{Overrides: map[string]bool{"write_*": false}}}, tool: writeFile,
			user: fakeUser{disabled: map[string]bool{"write_file": true}}, want: DisabledByConfig, wantInScope: true,
		},
		{name: "read_only drops a mutating tool", opts: Options{Rules: Rules{Default: DefaultReadOnly}}, tool: writeFile, want: DisabledByConfig, wantInScope: true},
		{name: "read_only keeps a read-only tool", opts: Options{Rules: Rules{Default: DefaultReadOnly}}, tool: readFile, want: Callable, wantInScope: true},
		{name: "user disabled", tool: writeFile, user: fakeUser{disabled: map[string]bool{"write_file": true}}, want: DisabledByUser, wantInScope: true},
		{name: "store error fails closed", tool: readFile, userErr: errStore, want: DisabledUnknown, wantInScope: true},
		{
			name: "store error fails closed with approval off",
			opts: Options{Approval: ApprovalOff}, tool: readFile, userErr: errStore, want: DisabledUnknown, wantInScope: true,
		},
		{name: "tofu new tool after baseline", tool: writeFile, user: fakeUser{baseline: true}, want: PendingApproval, wantInScope: true},
		{
			name: "tofu changed tool",
			tool: Tool{Name: "write_file", Hash: "h-write-2"}, user: approvedBoth, want: PendingApproval, wantInScope: true,
		},
		{name: "tofu approved tool", tool: writeFile, user: approvedBoth, want: Callable, wantInScope: true},
		{name: "manual unapproved", opts: Options{Approval: ApprovalManual}, tool: writeFile, want: PendingApproval, wantInScope: true},
		{
			name: "manual approved", opts: Options{Approval: ApprovalManual}, tool: writeFile,
			user: fakeUser{approved: map[string]string{"write_file": "h-write"}}, want: Callable, wantInScope: true,
		},
		{
			name: "approval off ignores hashes", opts: Options{Approval: ApprovalOff}, tool: writeFile,
			user: fakeUser{baseline: true}, want: Callable, wantInScope: true,
		},
		{name: "outside the allow-list", opts: Options{Allow: mustAllow(t, "read_*")}, tool: writeFile, wantInScope: false},
		{
			name: "allow-list never widens a config lock",
			opts: Options{Allow: mustAllow(t, "write_file"), Rules: Rules{Default: DefaultNone}}, tool: writeFile,
			want: DisabledByConfig, wantInScope: true,
		},
		{
			name: "allow-list never widens a user lock",
			opts: Options{Allow: mustAllow(t, "write_*")}, tool: writeFile,
			user: fakeUser{disabled: map[string]bool{"write_file": true}}, want: DisabledByUser, wantInScope: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := mustEvaluator(t, tt.opts)
			got, inScope := e.Status(tt.tool, tt.user, tt.userErr)
			assert.Equal(t, tt.wantInScope, inScope)
			if tt.wantInScope {
				assert.Equal(t, tt.want, got)
			}
			// The catalog path agrees with the single-tool path.
			ev := e.Evaluate([]Tool{tt.tool}, tt.user, tt.userErr)
			if !tt.wantInScope {
				assert.Empty(t, ev.Entries)
				return
			}
			assert.Equal(t, []Entry{{Index: 0, Status: tt.want}}, ev.Entries)
		})
	}
}

func TestEvaluateCatalog(t *testing.T) {
	t.Parallel()
	catalog := []Tool{
		{Name: "read_file", ReadOnly: true, Hash: "r"},
		{Name: "write_file", Hash: "w"},
		{Name: "move_file", Hash: "m"},
		{Name: "delete_file", Hash: "d"},
		{Name: "search", ReadOnly: true, Hash: "s2"},
		{Name: "new_tool", Hash: "n"},
		{Name: "secret_tool", Hash: "x"},
	}
	e := mustEvaluator(t, Options{
		Rules: Rules{Overrides: map[string]bool{"move_*": false}},
		Allow: mustAllow(t, "*_file,search,new_tool"),
	})
	user := fakeUser{
		baseline: true,
		disabled: map[string]bool{"delete_file": true},
		approved: map[string]string{"read_file": "r", "write_file": "w", "move_file": "m", "delete_file": "d", "search": "s1"},
	}
	ev := e.Evaluate(catalog, user, nil)
	assert.Equal(t, []Entry{
		{Index: 0, Status: Callable},
		{Index: 1, Status: Callable},
		{Index: 2, Status: DisabledByConfig},
		{Index: 3, Status: DisabledByUser},
		{Index: 4, Status: PendingApproval},
		{Index: 5, Status: PendingApproval},
	}, ev.Entries, "secret_tool is out of scope")
	assert.Equal(t, Counts{Callable: 2, DisabledByConfig: 1, DisabledByUser: 1, PendingApproval: 2}, ev.Counts)
	assert.Equal(t, 4, ev.Counts.Locked())
	assert.Equal(t, 6, ev.Counts.Total())
	assert.False(t, ev.RecordBaseline)

	t.Run("store error", func(t *testing.T) {
		t.Parallel()
		ev := e.Evaluate(catalog, nil, errStore)
		assert.Equal(t, Counts{DisabledByConfig: 1, DisabledUnknown: 5}, ev.Counts)
		assert.False(t, ev.RecordBaseline)
	})
}

func TestEvaluateRecordBaseline(t *testing.T) {
	t.Parallel()
	catalog := []Tool{{Name: "a", Hash: "1"}, {Name: "b", Hash: "2"}}
	tests := []struct {
		name    string
		opts    Options
		catalog []Tool
		user    UserState
		userErr error
		want    bool
	}{
		{name: "tofu, first catalog", catalog: catalog, want: true},
		{name: "tofu, first catalog, empty user state", catalog: catalog, user: fakeUser{}, want: true},
		{name: "tofu, baseline exists", catalog: catalog, user: fakeUser{baseline: true}, want: false},
		{name: "tofu, empty catalog", catalog: nil, want: false},
		{name: "tofu, store error", catalog: catalog, userErr: errStore, want: false},
		{name: "tofu, server disabled", opts: Options{ServerDisabled: true}, catalog: catalog, want: false},
		{name: "tofu, every tool out of scope", opts: Options{Allow: mustAllow(t, "z")}, catalog: catalog, want: true},
		{name: "manual", opts: Options{Approval: ApprovalManual}, catalog: catalog, want: false},
		{name: "off", opts: Options{Approval: ApprovalOff}, catalog: catalog, want: false},
		{name: "config unusable", opts: Options{ConfigErr: errStore}, catalog: catalog, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ev := mustEvaluator(t, tt.opts).Evaluate(tt.catalog, tt.user, tt.userErr)
			assert.Equal(t, tt.want, ev.RecordBaseline)
		})
	}
}

func TestEvaluatorConfigAllowsAndInScope(t *testing.T) {
	t.Parallel()
	e := mustEvaluator(t, Options{
		ServerDisabled: true,
		Rules:          Rules{Default: DefaultReadOnly, Overrides: map[string]bool{"write_note": true}},
		Allow:          mustAllow(t, "read_*"),
	})
	assert.True(t, e.ConfigAllows(Tool{Name: "read_file", ReadOnly: true}), "ignores the server switch")
	assert.True(t, e.ConfigAllows(Tool{Name: "write_note"}), "ignores the allow-list")
	assert.False(t, e.ConfigAllows(Tool{Name: "write_file"}))
	assert.True(t, e.InScope("read_file"))
	assert.False(t, e.InScope("write_note"))
}

// TestEvaluatorConfigErr: while the config cannot be used, every in-scope
// tool is disabled_unknown, whatever the rules, the server switch, the user
// state or the approvals say; the allow-list still narrows.
func TestEvaluatorConfigErr(t *testing.T) {
	t.Parallel()
	errConfig := fmt.Errorf("config.json:3:25: unknown key")
	e := mustEvaluator(t, Options{
		ServerDisabled: true,
		Rules:          Rules{Default: "nonsense"}, // ignored
		Allow:          mustAllow(t, "read_*"),
		Approval:       ApprovalOff,
		ConfigErr:      errConfig,
	})
	assert.Same(t, errConfig, e.ConfigErr())
	ev := e.Evaluate([]Tool{{Name: "read_a", ReadOnly: true}, {Name: "write"}, {Name: "read_b"}},
		fakeUser{approved: map[string]string{"read_a": ""}, baseline: true}, nil)
	assert.Equal(t, []Entry{{Index: 0, Status: DisabledUnknown}, {Index: 2, Status: DisabledUnknown}}, ev.Entries)
	assert.False(t, ev.RecordBaseline)
	assert.False(t, e.ConfigAllows(Tool{Name: "read_a", ReadOnly: true}))
	s, inScope := e.Status(Tool{Name: "read_a"}, nil, nil)
	assert.True(t, inScope)
	assert.Equal(t, DisabledUnknown, s)
}

func TestNewEvaluatorErrors(t *testing.T) {
	t.Parallel()
	for _, o := range []Options{
		{Rules: Rules{Default: "most"}},
		{Rules: Rules{Overrides: map[string]bool{"[": true}}},
		{Approval: "always"},
	} {
		_, err := NewEvaluator(o)
		require.ErrorIs(t, err, ErrInvalid, "%+v", o)
	}
}

func TestCountsJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		counts Counts
		want   string
	}{
		{name: "callable always present", counts: Counts{DisabledByUser: 2}, want: `{"callable":0,"disabled_by_user":2}`},
		{
			name:   "every key, in order",
			counts: Counts{Callable: 1, DisabledByConfig: 2, DisabledByUser: 3, PendingApproval: 4, ServerDisabled: 5, DisabledUnknown: 6},
			want:   `{"callable":1,"disabled_by_config":2,"disabled_by_user":3,"pending_approval":4,"server_disabled":5,"disabled_unknown":6}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := json.Marshal(tt.counts)
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, string(got))
			assert.Equal(t, tt.want, string(got))
		})
	}
}

func TestCountsAdd(t *testing.T) {
	t.Parallel()
	var c Counts
	for _, s := range []Status{Callable, ServerDisabled, DisabledByConfig, DisabledByUser, PendingApproval, DisabledUnknown, "", "bogus"} {
		c.Add(s)
	}
	assert.Equal(t, Counts{Callable: 1, ServerDisabled: 1, DisabledByConfig: 1, DisabledByUser: 1, PendingApproval: 1, DisabledUnknown: 3}, c)
}

// BenchmarkClassifyCatalog10k measures the tools/list hot path: a 10,000-tool
// catalog under overrides with globs, a baseline and user toggles.
func BenchmarkClassifyCatalog10k(b *testing.B) {
	const n = 10_000
	catalog := make([]Tool, n)
	user := fakeUser{baseline: true, disabled: map[string]bool{}, approved: map[string]string{}}
	for i := range catalog {
		name := fmt.Sprintf("tool_%05d", i)
		catalog[i] = Tool{Name: name, ReadOnly: i%2 == 0, Hash: fmt.Sprintf("%064x", i)}
		if i%10 != 0 {
			user.approved[name] = catalog[i].Hash
		}
		if i%7 == 0 {
			user.disabled[name] = true
		}
	}
	e := mustEvaluator(b, Options{Rules: Rules{
		Default:   DefaultReadOnly,
		Overrides: map[string]bool{"tool_000*": true, "tool_1????": false, "tool_99999": true, "tool_5*": true},
	}})
	b.ReportAllocs()
	for b.Loop() {
		ev := e.Evaluate(catalog, user, nil)
		if len(ev.Entries) != n {
			b.Fatalf("got %d entries", len(ev.Entries))
		}
	}
}
