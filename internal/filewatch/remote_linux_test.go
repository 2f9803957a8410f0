package filewatch

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRemoteFSName: the file systems whose notifications miss other
// machines' changes are named, by their statfs magic number, and no
// local one.
func TestRemoteFSName(t *testing.T) {
	tests := []struct {
		name  string
		magic uint32
		want  string
	}{
		{name: "nfs", magic: 0x6969, want: "NFS"},
		{name: "cifs", magic: 0xFF534D42, want: "SMB"},
		{name: "smb2", magic: 0xFE534D42, want: "SMB"},
		{name: "fuse (sshfs, WSL's drvfs elsewhere)", magic: 0x65735546, want: "a FUSE file system"},
		{name: "9p (WSL 2's /mnt/c)", magic: 0x01021997, want: "9p"},
		{name: "ext4", magic: 0xEF53, want: ""},
		{name: "tmpfs", magic: 0x01021994, want: ""},
		{name: "btrfs", magic: 0x9123683E, want: ""},
		{name: "overlay", magic: 0x794C7630, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, remoteFSName(tt.magic))
		})
	}
}
