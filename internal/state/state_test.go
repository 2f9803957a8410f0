package state

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestZeroServerIsUsable(t *testing.T) {
	var srv Server
	assert.True(t, srv.Empty())
	assert.False(t, srv.IsDisabled("t"))
	_, ok := srv.Approval("t")
	assert.False(t, ok)
	assert.True(t, srv.Disable("t"))
	assert.False(t, srv.Empty())
}

func TestDisableEnable(t *testing.T) {
	tests := []struct {
		name        string
		disabled    []string
		op          func(*Server) bool
		wantChanged bool
		want        []string
	}{
		{
			name:        "disable keeps the list sorted",
			disabled:    []string{"a", "c"},
			op:          func(s *Server) bool { return s.Disable("b") },
			wantChanged: true,
			want:        []string{"a", "b", "c"},
		},
		{
			name:     "disable twice is a no-op",
			disabled: []string{"a"},
			op:       func(s *Server) bool { return s.Disable("a") },
			want:     []string{"a"},
		},
		{
			name:        "enable removes",
			disabled:    []string{"a", "b"},
			op:          func(s *Server) bool { return s.Enable("a") },
			wantChanged: true,
			want:        []string{"b"},
		},
		{
			name:        "works on a list set by hand, unsorted",
			disabled:    []string{"c", "a"},
			op:          func(s *Server) bool { return s.Disable("b") },
			wantChanged: true,
			want:        []string{"a", "b", "c"},
		},
		{
			name:        "enable removes duplicates set by hand",
			disabled:    []string{"a", "b", "a"},
			op:          func(s *Server) bool { return s.Enable("a") },
			wantChanged: true,
			want:        []string{"b"},
		},
		{
			name:     "enable of an enabled tool is a no-op",
			disabled: []string{"a"},
			op:       func(s *Server) bool { return s.Enable("z") },
			want:     []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := &Server{Disabled: tt.disabled}
			assert.Equal(t, tt.wantChanged, tt.op(srv))
			assert.Equal(t, tt.want, srv.Disabled)
			for _, tool := range tt.want {
				assert.True(t, srv.IsDisabled(tool), tool)
			}
		})
	}
}

func TestApproveRevoke(t *testing.T) {
	var srv Server
	assert.False(t, srv.Revoke("t"), "nothing to revoke")

	first := Approval{Hash: "sha256:1", Definition: []byte(`{"name":"t"}`), ApprovedAt: when}
	srv.Approve("t", first)
	got, ok := srv.Approval("t")
	require.True(t, ok)
	assert.Equal(t, first, got)

	second := Approval{Hash: "sha256:2", Definition: []byte(`{"name":"t","description":"new"}`), ApprovedAt: when}
	srv.Approve("t", second)
	got, _ = srv.Approval("t")
	assert.Equal(t, second, got, "a new approval replaces the old one")

	assert.True(t, srv.Revoke("t"))
	_, ok = srv.Approval("t")
	assert.False(t, ok)
}
