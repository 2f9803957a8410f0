package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// Every subcommand parses its flags with parseFlags and reports a bad flag
// or value with usageFailed, so that mcpwrap speaks with one voice:
//
//	mcpwrap: --ready-timeout: "5" needs a unit, e.g. 5s
//	mcpwrap doctor: unknown flag --jsn
//
// followed by where to find the usage, and exit code 2.

// errHelp is returned by parseFlags when the arguments ask for the usage,
// which it has printed on stdout.
var errHelp = flag.ErrHelp

// parseFlags parses args with fs. The usage goes to stdout when asked for
// (-h, --help), and nowhere otherwise: a bad flag or value is returned as
// an error in mcpwrap's style ("--NAME: why"), for usageFailed to print.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	var bad error
	originals := map[string]flag.Value{}
	fs.VisitAll(func(f *flag.Flag) {
		originals[f.Name] = f.Value
		v := &namedValue{Value: f.Value, name: f.Name, err: &bad}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			f.Value = boolValue{v}
		} else {
			f.Value = v
		}
	})
	// The usage prints the defaults, which takes the original values.
	defer fs.VisitAll(func(f *flag.Flag) { f.Value = originals[f.Name] })
	usage := fs.Usage
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	if err := precheck(fs, args); err != nil {
		return err
	}
	err := fs.Parse(args)
	fs.VisitAll(func(f *flag.Flag) { f.Value = originals[f.Name] })
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		if usage != nil {
			usage()
		} else {
			fs.PrintDefaults()
		}
		return errHelp
	case err != nil && bad != nil:
		return bad
	}
	return err
}

// precheck finds the unknown flags and the flags missing their value the
// way the flag package reads them (up to the first argument that is not a
// flag, or "--"), so that they are reported in mcpwrap's words.
func precheck(fs *flag.FlagSet, args []string) error {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			return nil
		}
		name := strings.TrimLeft(a, "-")
		name, _, hasValue := strings.Cut(name, "=")
		if name == "h" || name == "help" {
			return nil
		}
		f := fs.Lookup(name)
		if f == nil {
			return fmt.Errorf("unknown flag --%s", name)
		}
		if _, ok := f.Value.(boolValue); ok || hasValue {
			continue
		}
		if i+1 == len(args) {
			return fmt.Errorf("--%s needs a value", name)
		}
		i++ // its value
	}
	return nil
}

// namedValue wraps a flag's Value so that a bad value is reported with the
// flag's name and in words a user can act on.
type namedValue struct {
	flag.Value
	name string
	err  *error
}

func (v *namedValue) Set(s string) error {
	err := v.Value.Set(s)
	if err == nil {
		return nil
	}
	*v.err = fmt.Errorf("--%s: %s", v.name, badValue(v.Value, s, err))
	return err
}

// Get returns the wrapped value, for flag.Getter.
func (v *namedValue) Get() any {
	if g, ok := v.Value.(flag.Getter); ok {
		return g.Get()
	}
	return nil
}

// boolValue is a namedValue of a boolean flag, which takes no value.
type boolValue struct{ *namedValue }

func (boolValue) IsBoolFlag() bool { return true }

// badValue says why s is not a valid value for v.
func badValue(v flag.Value, s string, err error) string {
	g, ok := v.(flag.Getter)
	if !ok {
		return err.Error()
	}
	switch g.Get().(type) {
	case time.Duration:
		if _, numErr := strconv.ParseFloat(s, 64); numErr == nil {
			return fmt.Sprintf("%q needs a unit, e.g. %ss", s, s)
		}
		return fmt.Sprintf("%q is not a duration, e.g. 500ms, 5s or 2m", s)
	case int, int64, uint, uint64:
		return fmt.Sprintf("%q is not a whole number", s)
	case float64:
		return fmt.Sprintf("%q is not a number", s)
	case bool:
		return fmt.Sprintf("%q is not true or false", s)
	}
	return err.Error()
}

// usageFailed reports a bad invocation of command ("mcpwrap", "mcpwrap
// doctor") and returns exitUsage.
func usageFailed(stderr io.Writer, command string, err error) int {
	fmt.Fprintf(stderr, "%s: %v\n", command, err)
	if command == "mcpwrap help" {
		command = "mcpwrap"
	}
	fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", command)
	return exitUsage
}

// buildCommit is the commit `make build` stamps (-ldflags -X), with
// "-modified" appended for a tree with changes: the build info has no
// commit where the VCS stamp is off (-buildvcs=false, a build outside the
// checkout), and --version must still say which build this is.
var buildCommit string

// version returns the module version and the VCS commit the binary was
// built from, as "v1.2.3 (commit 0123abc, modified)" or "(devel) (commit
// 0123abc)".
func version() string {
	bi, _ := debug.ReadBuildInfo()
	return versionOf(bi, buildCommit)
}

// versionOf is version for the build info bi (nil when there is none) and
// the commit stamped by make. The build info's commit wins: it is the Go
// toolchain's own record; the stamp serves where it has none.
func versionOf(bi *debug.BuildInfo, stamped string) string {
	v := "(devel)"
	var commit, modified string
	if bi != nil {
		v = cmp.Or(bi.Main.Version, v)
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = ", modified"
				}
			}
		}
	}
	if commit == "" {
		commit, modified = strings.TrimSuffix(stamped, "-modified"), ""
		if strings.HasSuffix(stamped, "-modified") {
			modified = ", modified"
		}
	}
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if commit == "" {
		return v + " (commit unknown: built without VCS information; build with make)"
	}
	return v + " (commit " + commit + modified + ")"
}
