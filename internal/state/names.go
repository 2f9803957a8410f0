package state

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
)

// ServersDir is the directory, inside the state directory, that holds one
// state file per server.
const ServersDir = "servers"

// serverFiles are the files of one server's state.
type serverFiles struct {
	path string // the state file
	lock string // its lock file: every write replaces the state file with a new inode
	temp string // the name pattern of the temporary files writes go through
}

// filesOf returns the files of the named server's state in the directory
// dir (the store's servers directory).
func filesOf(dir, server string) serverFiles {
	name := fileName(server)
	return serverFiles{
		path: filepath.Join(dir, name),
		lock: filepath.Join(dir, name+".lock"),
		temp: "." + name + ".tmp-",
	}
}

// fileName returns the name of the server's state file. A server name that
// is a portable file name on every system as it is (lower case letters,
// digits, and '.', '_' or '-' inside) is used as it is, so the usual
// "filesystem.json" is easy to find. Any other is tidied into one and
// suffixed with '~' and a digest of the name, which no name used as it is
// contains: distinct servers never share a file, not even on a file system
// that ignores letter case. The file also records the server's name, and
// reading a file that belongs to another server fails.
func fileName(server string) string {
	if plainName(server) {
		return server + ".json"
	}
	var b strings.Builder
	for _, r := range strings.ToLower(server) {
		if b.Len() >= 32 {
			break
		}
		if r < 0x80 && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	sum := sha256.Sum256([]byte(server))
	return b.String() + "~" + hex.EncodeToString(sum[:8]) + ".json"
}

// plainName reports whether name is its own file name everywhere: 1 to 64
// of a-z 0-9 . _ -, starting with a letter or digit, not ending with '.'
// (Windows drops it), and not a Windows device name such as "con".
func plainName(name string) bool {
	if name == "" || len(name) > 64 || name[len(name)-1] == '.' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	base, _, _ := strings.Cut(name, ".")
	switch base {
	case "con", "prn", "aux", "nul",
		"com1", "com2", "com3", "com4", "com5", "com6", "com7", "com8", "com9",
		"lpt1", "lpt2", "lpt3", "lpt4", "lpt5", "lpt6", "lpt7", "lpt8", "lpt9":
		return false
	}
	return true
}
