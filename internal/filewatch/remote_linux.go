package filewatch

import "golang.org/x/sys/unix"

// remoteFS names the file system holding dir when it is one whose
// notifications report only this machine's changes (a network or FUSE
// file system), else "".
func remoteFS(dir string) string {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return ""
	}
	// Type is int32 on some architectures, where the magic numbers above
	// 0x7fffffff are negative: the low 32 bits are the number.
	return remoteFSName(uint32(st.Type))
}

// remoteFSName names the file system of statfs magic number magic when it
// is one whose notifications miss other machines' changes, else "".
func remoteFSName(magic uint32) string {
	switch magic {
	case unix.NFS_SUPER_MAGIC:
		return "NFS"
	case unix.SMB_SUPER_MAGIC, unix.CIFS_SUPER_MAGIC, unix.SMB2_SUPER_MAGIC:
		return "SMB"
	case unix.FUSE_SUPER_MAGIC:
		return "a FUSE file system"
	case unix.V9FS_MAGIC:
		return "9p"
	case unix.CEPH_SUPER_MAGIC:
		return "Ceph"
	case unix.AFS_SUPER_MAGIC, unix.AFS_FS_MAGIC:
		return "AFS"
	}
	return ""
}
