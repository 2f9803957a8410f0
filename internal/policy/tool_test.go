package policy

import (
	"encoding/json"
	"testing"

	"github.com/mcpwrap/mcpwrap/internal/tooldef"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseTool(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		raw          string
		wantName     string
		wantReadOnly bool
		wantErr      error // besides ErrInvalid
	}{
		{name: "read-only", raw: `{"name":"a","annotations":{"readOnlyHint":true}}`, wantName: "a", wantReadOnly: true},
		{name: "not read-only", raw: `{"name":"b","annotations":{"readOnlyHint":"yes"}}`, wantName: "b"},
		{name: "no name", raw: `{"annotations":{}}`, wantErr: tooldef.ErrInvalid},
		{name: "not an object", raw: `"x"`, wantErr: tooldef.ErrInvalid},
		{name: "name twice", raw: `{"name":"a","name":"b"}`, wantErr: tooldef.ErrAmbiguous},
		{name: "name in another case", raw: `{"name":"a","NAME":"b"}`, wantErr: tooldef.ErrAmbiguous},
		{name: "name escaped", raw: `{"n\u0061me":"a"}`, wantErr: tooldef.ErrAmbiguous},
		{name: "readOnlyHint in another case", raw: `{"name":"a","annotations":{"READONLYHINT":true}}`, wantErr: tooldef.ErrAmbiguous},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseTool(json.RawMessage(tt.raw))
			if tt.wantErr != nil {
				require.ErrorIs(t, err, ErrInvalid)
				require.ErrorIs(t, err, tt.wantErr)
				assert.Equal(t, Tool{Refused: true}, got)
				return
			}
			require.NoError(t, err)
			d, err := tooldef.Parse([]byte(tt.raw))
			require.NoError(t, err)
			assert.Equal(t, Tool{Name: tt.wantName, ReadOnly: tt.wantReadOnly, Hash: d.Hash}, got)
		})
	}
}

// TestRefusedToolIsDisabledUnknown: a refused tool has no name any rule,
// allow-list, toggle or approval could apply to: it is in scope and
// disabled_unknown, unless its whole server is disabled.
func TestRefusedToolIsDisabledUnknown(t *testing.T) {
	t.Parallel()
	refused := Tool{Name: "read_file", Refused: true}
	allow, err := ParseAllowList("other")
	require.NoError(t, err)
	tests := []struct {
		name string
		opts Options
		user UserState
		want Status
	}{
		{name: "tofu without baseline", opts: Options{}, want: DisabledUnknown},
		{name: "approval off", opts: Options{Approval: ApprovalOff}, want: DisabledUnknown},
		{name: "an override turning it on", opts: Options{Approval: ApprovalOff, Rules: Rules{Default: DefaultNone, Overrides: map[string]bool{"read_file": true}}}, want: DisabledUnknown},
		{name: "outside the allow-list", opts: Options{Allow: allow}, want: DisabledUnknown},
		{name: "server disabled", opts: Options{ServerDisabled: true}, want: ServerDisabled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := mustEvaluator(t, tt.opts)
			s, inScope := e.Status(refused, tt.user, nil)
			assert.True(t, inScope)
			assert.Equal(t, tt.want, s)
			ev := e.Evaluate([]Tool{refused}, tt.user, nil)
			require.Len(t, ev.Entries, 1)
			assert.Equal(t, tt.want, ev.Entries[0].Status)
		})
	}
}
