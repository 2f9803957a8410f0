// Package pgtest runs a throwaway PostgreSQL cluster for tests: Debian's
// (or any) PostgreSQL binaries, a data directory and a unix socket in a
// temporary directory, password authentication, and, when the tests run as
// root (CI does), an unprivileged user to run the server as, since
// PostgreSQL refuses to run as root.
//
// A cluster is made once per test binary (TestMain) and each test takes a
// database of its own ([Cluster.CreateDB]); a test that stops the server
// makes a cluster of its own. Clients find the password in the password
// file the cluster writes ([Cluster.PassFile]), as libpq's $PGPASSFILE.
package pgtest

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvRequire, set to 1 (as make does), turns a missing PostgreSQL into a
// test failure instead of a skip.
const EnvRequire = "MCPWRAP_REQUIRE_PG"

// User is the database role the tests connect as.
const User = "mcpwrap"

// ErrNotInstalled is returned by [New] when no PostgreSQL binaries are found.
var ErrNotInstalled = errors.New("PostgreSQL is not installed (no initdb in /usr/lib/postgresql/*/bin or on PATH): apt-get install postgresql, or run make")

// Cluster is a running throwaway cluster. Its methods are safe for
// concurrent use but Start and Stop, which the test calls in turn.
type Cluster struct {
	// Dir holds everything: the data directory, the socket, the log and
	// the password file.
	Dir string
	// PassFile is the password file clients read (set $PGPASSFILE to it).
	PassFile string

	bin     string // the directory of initdb, pg_ctl, postgres
	owner   *account
	dbs     atomic.Int64
	running atomic.Bool
}

// New makes a cluster in a new temporary directory and starts it. Call
// [Cluster.Close] when done, whatever happened.
func New() (*Cluster, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	// A short path: a unix socket's path is limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "mcpwrap-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir, PassFile: filepath.Join(dir, "pgpass"), bin: bin}
	if err := c.init(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := c.Start(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) dataDir() string   { return filepath.Join(c.Dir, "data") }
func (c *Cluster) socketDir() string { return filepath.Join(c.Dir, "run") }

func (c *Cluster) init() error {
	owner, err := unprivileged()
	if err != nil {
		return err
	}
	c.owner = owner
	var secret [16]byte
	_, _ = rand.Read(secret[:])
	password := hex.EncodeToString(secret[:])
	pwfile := filepath.Join(c.Dir, "initdb-pw")
	if err := os.WriteFile(pwfile, []byte(password+"\n"), 0o600); err != nil {
		return err
	}
	defer os.Remove(pwfile)
	if err := os.WriteFile(c.PassFile, []byte("*:*:*:"+User+":"+password+"\n"), 0o600); err != nil {
		return err
	}
	if err := os.Mkdir(c.socketDir(), 0o700); err != nil {
		return err
	}
	for _, p := range []string{c.Dir, pwfile, c.socketDir()} {
		if err := c.owner.chown(p); err != nil {
			return err
		}
	}
	return c.run("initdb", "-D", c.dataDir(), "-U", User, "--pwfile="+pwfile,
		"--auth=scram-sha-256", "-E", "UTF8", "--no-locale", "--no-sync")
}

// Start starts the server (again, after Stop) and waits until it accepts
// connections.
func (c *Cluster) Start() error {
	opts := fmt.Sprintf("-c listen_addresses='' -c unix_socket_directories='%s' -c fsync=off "+
		"-c synchronous_commit=off -c full_page_writes=off -c max_connections=200", c.socketDir())
	err := c.run("pg_ctl", "-D", c.dataDir(), "-l", filepath.Join(c.Dir, "log"), "-o", opts, "-w", "-t", "60", "start")
	if err == nil {
		c.running.Store(true)
	}
	return err
}

// Stop stops the server at once (fast shutdown: sessions are ended).
func (c *Cluster) Stop() error {
	err := c.run("pg_ctl", "-D", c.dataDir(), "-m", "fast", "-w", "-t", "60", "stop")
	if err == nil {
		c.running.Store(false)
	}
	return err
}

// Close stops the server if it runs and removes the directory.
func (c *Cluster) Close() {
	if c.running.Load() {
		_ = c.Stop()
	}
	_ = os.RemoveAll(c.Dir)
}

// DSN returns the URL of database db, without a password.
func (c *Cluster) DSN(db string) string {
	q := url.Values{"host": {c.socketDir()}}
	return (&url.URL{Scheme: "postgres", User: url.User(User), Path: "/" + db, RawQuery: q.Encode()}).String()
}

// CreateDB creates a new, empty database and returns its URL.
func (c *Cluster) CreateDB(ctx context.Context) (string, error) {
	name := fmt.Sprintf("t%d_%d", os.Getpid(), c.dbs.Add(1))
	cfg, err := pgx.ParseConfig(c.DSN("postgres"))
	if err != nil {
		return "", err
	}
	cfg.Password, err = c.password()
	if err != nil {
		return "", err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	return c.DSN(name), nil
}

// Exec runs sql on database dsn, bypassing the code under test.
func (c *Cluster) Exec(ctx context.Context, dsn, sql string, args ...any) error {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return err
	}
	if cfg.Password, err = c.password(); err != nil {
		return err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql, args...)
	return err
}

func (c *Cluster) password() (string, error) {
	data, err := os.ReadFile(c.PassFile)
	if err != nil {
		return "", err
	}
	line := strings.TrimSpace(string(data))
	return line[strings.LastIndexByte(line, ':')+1:], nil
}

// run runs one of the PostgreSQL programs as the cluster's owner.
func (c *Cluster) run(program string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, program), args...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	c.owner.apply(cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", program, err, out)
	}
	return nil
}

// binDir finds the PostgreSQL binaries: Debian's newest major version, else
// those on PATH.
func binDir() (string, error) {
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	slices.SortFunc(found, func(a, b string) int { return cmp.Compare(major(b), major(a)) })
	if len(found) > 0 {
		return filepath.Dir(found[0]), nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", ErrNotInstalled
}

// major is the major version in a Debian binary path, 0 if none.
func major(path string) int {
	var v int
	_, _ = fmt.Sscanf(filepath.Base(filepath.Dir(filepath.Dir(path))), "%d", &v)
	return v
}
