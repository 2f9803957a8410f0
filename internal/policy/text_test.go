package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

var lockedStatuses = []Status{ServerDisabled, DisabledByConfig, DisabledByUser, PendingApproval, DisabledUnknown}

func TestRemediation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status  Status
		want    []string
		without []string
	}{
		{status: Callable},
		{status: ServerDisabled, want: []string{"enable the server", "config", "servers.SERVER.enabled"}, without: []string{"mcpwrap tools"}},
		{status: DisabledByConfig, want: []string{"Operator policy", "not user-overridable", "servers.SERVER.tools"}, without: []string{"mcpwrap tools", "re-enable"}},
		{status: DisabledByUser, want: []string{"Ask the user to re-enable", "`mcpwrap tools enable SERVER TOOL`"}},
		{status: PendingApproval, want: []string{"review and approve", "`mcpwrap tools approve SERVER TOOL`"}},
		{status: DisabledUnknown, want: []string{"undetermined", "check mcpwrap's log"}, without: []string{"mcpwrap tools"}},
		{status: "bogus", want: []string{"undetermined"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.status), func(t *testing.T) {
			t.Parallel()
			got := Remediation(tt.status)
			if tt.want == nil {
				assert.Empty(t, got)
			}
			for _, s := range tt.want {
				assert.Contains(t, got, s)
			}
			for _, s := range tt.without {
				assert.NotContains(t, got, s)
			}
		})
	}
}

func TestRemediationForFillsNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		status       Status
		server, tool string
		want         string
	}{
		{name: "enable", status: DisabledByUser, server: "filesystem", tool: "write_file", want: "`mcpwrap tools enable filesystem write_file`"},
		{name: "approve", status: PendingApproval, server: "filesystem", tool: "write_file", want: "`mcpwrap tools approve filesystem write_file`"},
		{name: "server known, tool not", status: DisabledByUser, server: "filesystem", want: "`mcpwrap tools enable filesystem TOOL`"},
		{name: "config path", status: DisabledByConfig, server: "filesystem", tool: "write_file", want: "servers.filesystem.tools"},
		{name: "quoted for the shell", status: DisabledByUser, server: "my server", tool: "it's", want: `mcpwrap tools enable 'my server' 'it'\''s'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Contains(t, RemediationFor(tt.status, tt.server, tt.tool), tt.want)
		})
	}
}

func TestRejectionText(t *testing.T) {
	t.Parallel()
	const pointer = "Call discover_tools with include_disabled:true to see locked tools and remediation."
	tests := []struct {
		status  Status
		want    []string
		without []string
	}{
		{
			status:  ServerDisabled,
			want:    []string{NotCallable, "Server 'fs' is disabled", "servers.fs.enabled"},
			without: []string{"mcpwrap tools enable"},
		},
		{
			status:  DisabledByConfig,
			want:    []string{"Tool 'write_file' on server 'fs' is disabled by operator policy.", "not user-overridable", "servers.fs.tools"},
			without: []string{NotCallable, "mcpwrap tools enable", "re-enable", "Ask the user"},
		},
		{
			status: DisabledByUser,
			want:   []string{NotCallable, "The user disabled tool 'write_file' on server 'fs'.", "`mcpwrap tools enable fs write_file`"},
		},
		{
			status:  PendingApproval,
			want:    []string{NotCallable, "awaiting approval: it is new, or its definition changed", "`mcpwrap tools approve fs write_file`"},
			without: []string{"mcpwrap tools enable"},
		},
		{
			status:  DisabledUnknown,
			want:    []string{NotCallable, "could not determine", "check mcpwrap's log"},
			without: []string{"mcpwrap tools"},
		},
	}
	for _, tt := range tests {
		t.Run(string(tt.status), func(t *testing.T) {
			t.Parallel()
			got := RejectionText(tt.status, "fs", "write_file", "")
			assert.Truef(t, len(got) > len(pointer) && got[len(got)-len(pointer):] == pointer, "ends with the pointer: %s", got)
			for _, s := range tt.want {
				assert.Contains(t, got, s)
			}
			for _, s := range tt.without {
				assert.NotContains(t, got, s)
			}
		})
	}
}

func TestRejectionTextDistinctPerStatus(t *testing.T) {
	t.Parallel()
	seen := map[string]Status{}
	for _, s := range lockedStatuses {
		text := RejectionText(s, "fs", "t", "")
		prev, dup := seen[text]
		assert.False(t, dup, "%s and %s share a text", s, prev)
		seen[text] = s
	}
}

func TestRejectionTextEdges(t *testing.T) {
	t.Parallel()
	assert.Empty(t, RejectionText(Callable, "fs", "t", ""))
	assert.Contains(t, RejectionText(PendingApproval, "fs", "t", "find_tools"),
		"Call find_tools with include_disabled:true to see locked tools and remediation.")
	assert.Equal(t, RejectionText(DisabledUnknown, "fs", "t", ""), RejectionText("bogus", "fs", "t", ""),
		"an invalid status reads as disabled_unknown")
	assert.Contains(t, RejectionText(DisabledByUser, "", "", ""), "`mcpwrap tools enable SERVER TOOL`")
}

// TestTextsNameThePanel: the agent is told of the panel wherever the user
// can unlock a tool, beside the CLI command, and never for an operator's
// lock, which the panel cannot lift either.
func TestTextsNameThePanel(t *testing.T) {
	for _, tt := range []struct {
		status Status
		panel  bool
	}{
		{status: DisabledByUser, panel: true},
		{status: PendingApproval, panel: true},
		{status: DisabledByConfig},
		{status: ServerDisabled},
		{status: DisabledUnknown},
	} {
		t.Run(string(tt.status), func(t *testing.T) {
			text := RejectionText(tt.status, "fs", "write_file", "")
			if !tt.panel {
				assert.NotContains(t, text, Panel)
				return
			}
			assert.Contains(t, text, "in mcpwrap's panel: `mcpwrap ui`")
			assert.Contains(t, text, "`mcpwrap tools ", "the CLI command stays beside it")
		})
	}
	notice := PendingNotice(2, "a, b", "fs")
	assert.Contains(t, notice, "mcpwrap tools approve fs TOOL")
	assert.Contains(t, notice, "in mcpwrap's panel: `mcpwrap ui`")
}
