package policy

import (
	"errors"
	"strings"
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
			got := RejectionText(tt.status, "fs", "write_file", "discover_tools")
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

// TestRejectionWithoutDiscoveryTool: with the discovery tool not listed
// (--discovery never, discoveryTool ""), no rejection points to it.
func TestRejectionWithoutDiscoveryTool(t *testing.T) {
	t.Parallel()
	texts := []string{ConfigErrorRejection(errors.New("bad"), ""), StoreErrorRejection(errors.New("bad"), "")}
	for _, s := range lockedStatuses {
		texts = append(texts, RejectionText(s, "fs", "t", ""))
	}
	for _, text := range texts {
		assert.NotContains(t, text, "include_disabled")
		assert.NotContains(t, text, "discover_tools")
		assert.NotContains(t, text, "Call ")
	}
}

// TestStoreErrorTextsNameTheCauseAndWhoFixesIt: a tool the unreadable
// state store locks is explained by the store's error (which names the
// file and the fix), and as the user's to fix, not "check mcpwrap's log".
func TestStoreErrorTextsNameTheCauseAndWhoFixesIt(t *testing.T) {
	t.Parallel()
	err := errors.New("state file /s/servers/fs.json is unreadable: invalid JSON; move it aside to start over")
	for _, text := range []string{StoreErrorRemediation(err), StoreErrorRejection(err, "discover_tools")} {
		assert.Contains(t, text, "/s/servers/fs.json is unreadable: invalid JSON; move it aside to start over")
		assert.Contains(t, text, "Only the user can fix this")
		assert.NotContains(t, text, "check mcpwrap's log")
	}
	assert.True(t, strings.HasPrefix(StoreErrorRejection(err, "find"), NotCallable))
	assert.True(t, strings.HasSuffix(StoreErrorRejection(err, "find"), "Call find with include_disabled:true to see locked tools and remediation."))
}
