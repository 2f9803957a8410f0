package policy

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var errStore = errors.New("state store unreadable")

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		facts Facts
		want  Status
	}{
		{name: "zero facts fail closed", facts: Facts{}, want: ServerDisabled},
		{
			name:  "server disabled beats everything",
			facts: Facts{ConfigAllowed: false, UserDisabled: true, Approval: ApprovalPending, StoreErr: errStore},
			want:  ServerDisabled,
		},
		{
			name:  "server disabled beats a callable tool",
			facts: Facts{ConfigAllowed: true, Approval: ApprovalGranted},
			want:  ServerDisabled,
		},
		{name: "config denied", facts: Facts{ServerEnabled: true, Approval: ApprovalGranted}, want: DisabledByConfig},
		{
			name:  "config denied beats user disabled",
			facts: Facts{ServerEnabled: true, UserDisabled: true, Approval: ApprovalGranted},
			want:  DisabledByConfig,
		},
		{
			name:  "config denied beats store error",
			facts: Facts{ServerEnabled: true, StoreErr: errStore},
			want:  DisabledByConfig,
		},
		{
			name:  "store error fails closed",
			facts: Facts{ServerEnabled: true, ConfigAllowed: true, Approval: ApprovalNotRequired, StoreErr: errStore},
			want:  DisabledUnknown,
		},
		{
			name:  "store error beats user disabled",
			facts: Facts{ServerEnabled: true, ConfigAllowed: true, UserDisabled: true, StoreErr: errStore},
			want:  DisabledUnknown,
		},
		{
			name:  "user disabled",
			facts: Facts{ServerEnabled: true, ConfigAllowed: true, UserDisabled: true, Approval: ApprovalGranted},
			want:  DisabledByUser,
		},
		{
			name:  "user disabled beats pending approval",
			facts: Facts{ServerEnabled: true, ConfigAllowed: true, UserDisabled: true, Approval: ApprovalPending},
			want:  DisabledByUser,
		},
		{
			name:  "pending approval",
			facts: Facts{ServerEnabled: true, ConfigAllowed: true, Approval: ApprovalPending},
			want:  PendingApproval,
		},
		{
			name:  "approved",
			facts: Facts{ServerEnabled: true, ConfigAllowed: true, Approval: ApprovalGranted},
			want:  Callable,
		},
		{
			name:  "approval not required",
			facts: Facts{ServerEnabled: true, ConfigAllowed: true, Approval: ApprovalNotRequired},
			want:  Callable,
		},
		{
			name:  "unknown approval state is indeterminate",
			facts: Facts{ServerEnabled: true, ConfigAllowed: true, Approval: ApprovalState(42)},
			want:  DisabledUnknown,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, Classify(tt.facts))
		})
	}
}

func TestStatusLocked(t *testing.T) {
	t.Parallel()
	assert.False(t, Callable.Locked())
	for _, s := range []Status{"", ServerDisabled, DisabledByConfig, DisabledByUser, PendingApproval, DisabledUnknown, "bogus"} {
		assert.True(t, s.Locked(), "status %q", s)
	}
}

func TestApprovalFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		mode     ApprovalMode
		baseline bool
		approved string
		current  string
		want     ApprovalState
	}{
		{name: "off never requires approval", mode: ApprovalOff, baseline: true, approved: "a", current: "b", want: ApprovalNotRequired},
		{name: "tofu without baseline trusts the first catalog", mode: ApprovalTOFU, current: "b", want: ApprovalGranted},
		{name: "tofu without baseline ignores stale approvals", mode: ApprovalTOFU, approved: "a", current: "b", want: ApprovalGranted},
		{name: "tofu unchanged tool", mode: ApprovalTOFU, baseline: true, approved: "a", current: "a", want: ApprovalGranted},
		{name: "tofu new tool", mode: ApprovalTOFU, baseline: true, current: "a", want: ApprovalPending},
		{name: "tofu changed tool", mode: ApprovalTOFU, baseline: true, approved: "a", current: "b", want: ApprovalPending},
		{name: "tofu empty hashes never match", mode: ApprovalTOFU, baseline: true, want: ApprovalPending},
		{name: "zero mode is tofu", mode: "", current: "b", want: ApprovalGranted},
		{name: "manual unapproved", mode: ApprovalManual, current: "a", want: ApprovalPending},
		{name: "manual ignores the baseline", mode: ApprovalManual, baseline: false, approved: "a", current: "a", want: ApprovalGranted},
		{name: "manual changed tool", mode: ApprovalManual, baseline: true, approved: "a", current: "b", want: ApprovalPending},
		{name: "unknown mode fails closed", mode: "sometimes", approved: "a", current: "a", want: ApprovalPending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := ApprovalFor(tt.mode, tt.baseline, tt.approved, tt.current)
			assert.Equal(t, tt.want, got, "got %v", got)
		})
	}
}

func TestParseApprovalMode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    ApprovalMode
		wantErr bool
	}{
		{in: "", want: ApprovalTOFU},
		{in: "tofu", want: ApprovalTOFU},
		{in: "manual", want: ApprovalManual},
		{in: "off", want: ApprovalOff},
		{in: "TOFU", wantErr: true},
		{in: "on", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseApprovalMode(tt.in)
			if tt.wantErr {
				require.ErrorIs(t, err, ErrInvalid)
				assert.Contains(t, err.Error(), "tofu, manual or off")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestApprovalStateString(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "pending", ApprovalState(0).String())
	assert.Equal(t, "granted", ApprovalGranted.String())
	assert.Equal(t, "not_required", ApprovalNotRequired.String())
	assert.Equal(t, "unknown", ApprovalState(9).String())
}
