package runstatus

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Alive reports whether process pid runs and is an mcpwrap, by its command
// line: a pid the system gave to another program since is not alive for
// this purpose. A zombie has an empty command line and is not alive either.
func Alive(pid int) bool {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	argv0, _, _ := bytes.Cut(raw, []byte{0})
	return isMcpwrap(string(argv0))
}

// isMcpwrap reports whether argv0 runs an mcpwrap binary, however it was
// renamed around that word (mcpwrap-1.2, /opt/mcpwrap/bin/mcpwrap).
func isMcpwrap(argv0 string) bool {
	return strings.Contains(filepath.Base(argv0), "mcpwrap")
}
