// Package config loads mcpwrap's config file and resolves where
// the config file and the state directory live.
//
// The file is one JSON object: a `defaults` block every server inherits and
// `servers`, keyed by the --name a sidecar runs with. Durations are strings
// ("250ms"); unknown keys, wrong types and bad values are errors that name
// the file, line, column and key path. A loaded File is immutable and safe
// for concurrent use.
package config

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/policy"
	"github.com/mcpwrap/mcpwrap/middleware"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// DiscoveryMode says when the discovery tool is listed: the Session's own
// type, so that what the config says is what the Session is given.
type DiscoveryMode = middleware.DiscoveryMode

// The discovery modes (see [middleware.DiscoveryMode]).
const (
	DiscoveryAuto   = middleware.DiscoveryAuto
	DiscoveryAlways = middleware.DiscoveryAlways
	DiscoveryNever  = middleware.DiscoveryNever
)

// Built-in defaults, used for every setting neither `defaults` nor the
// server's entry sets. See also DefaultRetry. Each one is the default of
// the package that uses the setting, so the two cannot differ.
const (
	DefaultApproval      = policy.ApprovalTOFU
	DefaultToolDefault   = policy.DefaultAll
	DefaultReadyTimeout  = middleware.DefaultReadyTimeout
	DefaultDiscoveryTool = middleware.DefaultDiscoveryTool
	DefaultDiscovery     = DiscoveryAuto
	DefaultMaxLineBytes  = middleware.DefaultMaxMessageBytes
	// DefaultMaxHeldRequests and DefaultMaxHeldBytes are the middleware's.
	DefaultMaxHeldRequests = middleware.DefaultMaxHeldRequests
	DefaultMaxHeldBytes    = middleware.DefaultMaxHeldBytes
	// DefaultMaxInFlight is the middleware's.
	DefaultMaxInFlight = middleware.DefaultMaxInFlight
	// DefaultMaxCatalogBytes is the middleware's.
	DefaultMaxCatalogBytes = middleware.DefaultMaxCatalogBytes

	// MinMaxLineBytes is the smallest accepted max_line_bytes, so that a
	// value meant in KiB or MiB is caught rather than breaking every message.
	MinMaxLineBytes = 1024
)

// Retry is the bounded backoff used while loading the upstream. cmd converts
// it to the resilience package's policy.
type Retry struct {
	// Initial is the first delay.
	Initial time.Duration
	// MaxInterval caps any single delay.
	MaxInterval time.Duration
	// Multiplier grows the delay after each attempt (at least 1).
	Multiplier float64
	// Jitter is the randomisation factor, in [0, 1].
	Jitter float64
	// MaxAttempts bounds the attempts of one load (at least 1).
	MaxAttempts int
	// MaxElapsed bounds the duration of one load.
	MaxElapsed time.Duration
}

// DefaultRetry returns the built-in retry settings, those of
// [resilience.DefaultLoadPolicy]: 250 ms initial, ×2, jitter 0.5, 5 s cap,
// 6 attempts or 30 s.
func DefaultRetry() Retry {
	p := resilience.DefaultLoadPolicy()
	return Retry{
		Initial:     p.Initial,
		MaxInterval: p.MaxInterval,
		Multiplier:  p.Multiplier,
		Jitter:      p.Jitter,
		MaxAttempts: p.MaxAttempts,
		MaxElapsed:  p.MaxElapsed,
	}
}

// Server is the effective configuration of one server: built-in defaults,
// overridden by the file's `defaults`, overridden by the server's entry.
type Server struct {
	// Name is the server's --name.
	Name string
	// Enabled is false when the server is switched off (`enabled`).
	Enabled bool
	// Tools is the operator policy for the server's tools (`tools`).
	Tools policy.Rules
	// Approval is the tool-definition pinning mode (`approval`).
	Approval policy.ApprovalMode
	// ReadyTimeout is how long the client's handshake waits for the upstream
	// before mcpwrap answers it in degraded mode (`ready_timeout`).
	ReadyTimeout time.Duration
	// CallTimeout bounds the wait for the upstream's answer to a request;
	// past it mcpwrap answers and cancels the request (`call_timeout`).
	// Zero, the default, means no bound.
	CallTimeout time.Duration
	// Retry is the backoff while loading the upstream (`retry`).
	Retry Retry
	// RetryRefused makes "connection refused" transient (`retry_refused`).
	RetryRefused bool
	// Env is added to the stdio child's environment (`env`).
	Env map[string]string
	// DiscoveryTool is the discovery tool's name (`discovery_tool`).
	DiscoveryTool string
	// Discovery says when the discovery tool is listed (`discovery`).
	Discovery DiscoveryMode
	// MaxLineBytes is the largest JSON-RPC line relayed (`max_line_bytes`).
	MaxLineBytes int
	// MaxHeldRequests bounds the client requests waiting at once for the
	// tool catalog, the upstream's handshake or its restart
	// (`max_held_requests`).
	MaxHeldRequests int
	// MaxHeldBytes bounds their total size (`max_held_bytes`).
	MaxHeldBytes int
	// MaxInFlight bounds the requests in flight at once in each direction
	// (`max_in_flight`).
	MaxInFlight int
	// MaxCatalogBytes bounds the tool catalog kept (`max_catalog_bytes`).
	MaxCatalogBytes int
	// OAuth is how mcpwrap signs in to a remote server (`oauth`).
	OAuth OAuth
}

// Default returns the built-in configuration of a server the file does not
// mention, as (*File)(nil).Server(name) does.
func Default(name string) Server {
	return Server{
		Name:          name,
		Enabled:       true,
		Tools:         policy.Rules{Default: DefaultToolDefault},
		Approval:      DefaultApproval,
		ReadyTimeout:  DefaultReadyTimeout,
		Retry:         DefaultRetry(),
		DiscoveryTool: DefaultDiscoveryTool,
		Discovery:     DefaultDiscovery,
		MaxLineBytes:  DefaultMaxLineBytes,

		MaxHeldRequests: DefaultMaxHeldRequests,
		MaxHeldBytes:    DefaultMaxHeldBytes,
		MaxInFlight:     DefaultMaxInFlight,
		MaxCatalogBytes: DefaultMaxCatalogBytes,
	}
}

// File is a loaded config file. The nil *File is a missing file: every
// server gets the built-in defaults. A File is immutable and safe for
// concurrent use.
type File struct {
	// Path is where the file was looked for, as given to Load or Parse.
	Path string
	// Found is false when there was no file at Path (all defaults).
	Found bool

	defaults layer
	servers  map[string]*layer
	store    string // `store`, "" when the file sets none
}

// Store returns the file's `store`: the state store every mcpwrap process
// reading the file shares ([StoreFile] or a postgres:// URL without a
// password), or "" when the file names none (see [StoreLocation]).
func (f *File) Store() string {
	if f == nil {
		return ""
	}
	return f.store
}

// Load reads and validates the config file at path. A missing file is not
// an error: it yields a File with Found false and every default; a dangling
// symbolic link is an error. An
// unreadable or invalid file yields an *Error, which matches ErrInvalid.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if _, lerr := os.Lstat(path); lerr != nil {
			return &File{Path: path}, nil
		}
		// The name exists but leads nowhere: a broken config, not a
		// missing one, whose operator policy must not silently vanish.
		return nil, &Error{File: path, Msg: "cannot read the config file: it is a symbolic link to a file that does not exist", Err: err}
	}
	if err != nil {
		cause := err
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			cause = pathErr.Err
		}
		return nil, &Error{File: path, Msg: "cannot read the config file: " + cause.Error(), Err: err}
	}
	return Parse(path, data)
}

// Parse validates data as the contents of the config file at path, which
// only names the file in errors. Errors are *Error and match ErrInvalid.
func Parse(path string, data []byte) (*File, error) {
	p := parser{file: path, data: data}
	root, err := p.tree()
	if err != nil {
		return nil, err
	}
	f := &File{Path: path, Found: true, servers: map[string]*layer{}}
	if err := p.root(root, f); err != nil {
		return nil, err
	}
	return f, nil
}

// Server returns the effective configuration of the named server. Every
// scalar set in the server's entry replaces the `defaults` value, which
// replaces the built-in default, even when it is false or zero; the maps
// (`tools.overrides`, `env`) merge key by key, the server's entries winning.
// The returned maps are fresh copies the caller may modify.
func (f *File) Server(name string) Server {
	s := Default(name)
	if f == nil {
		return s
	}
	f.defaults.applyTo(&s)
	if l, ok := f.servers[name]; ok {
		l.applyTo(&s)
	}
	return s
}

// Names returns the names of the servers the file configures, sorted.
func (f *File) Names() []string {
	if f == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(f.servers))
}

// Has reports whether the file has an entry for the named server.
func (f *File) Has(name string) bool {
	if f == nil {
		return false
	}
	_, ok := f.servers[name]
	return ok
}

// layer is one level of settings as written in the file; nil pointers and
// maps are settings it leaves to the level below.
type layer struct {
	enabled       *bool
	toolDefault   *policy.ToolDefault
	overrides     map[string]bool
	approval      *policy.ApprovalMode
	readyTimeout  *time.Duration
	callTimeout   *time.Duration
	retry         retryLayer
	retryRefused  *bool
	env           map[string]string
	discoveryTool *string
	discovery     *DiscoveryMode
	maxLineBytes  *int
	maxHeld       *int
	maxHeldBytes  *int
	maxInFlight   *int
	maxCatalog    *int
	oauth         oauthLayer
}

type retryLayer struct {
	initial, maxInterval, maxElapsed *time.Duration
	multiplier, jitter               *float64
	maxAttempts                      *int
}

func (l *layer) applyTo(s *Server) {
	set(&s.Enabled, l.enabled)
	set(&s.Tools.Default, l.toolDefault)
	s.Tools.Overrides = merge(s.Tools.Overrides, l.overrides)
	set(&s.Approval, l.approval)
	set(&s.ReadyTimeout, l.readyTimeout)
	set(&s.CallTimeout, l.callTimeout)
	set(&s.Retry.Initial, l.retry.initial)
	set(&s.Retry.MaxInterval, l.retry.maxInterval)
	set(&s.Retry.Multiplier, l.retry.multiplier)
	set(&s.Retry.Jitter, l.retry.jitter)
	set(&s.Retry.MaxAttempts, l.retry.maxAttempts)
	set(&s.Retry.MaxElapsed, l.retry.maxElapsed)
	set(&s.RetryRefused, l.retryRefused)
	s.Env = merge(s.Env, l.env)
	set(&s.DiscoveryTool, l.discoveryTool)
	set(&s.Discovery, l.discovery)
	set(&s.MaxLineBytes, l.maxLineBytes)
	set(&s.MaxHeldRequests, l.maxHeld)
	set(&s.MaxHeldBytes, l.maxHeldBytes)
	set(&s.MaxInFlight, l.maxInFlight)
	set(&s.MaxCatalogBytes, l.maxCatalog)
	l.oauth.applyTo(&s.OAuth)
}

func set[T any](dst, src *T) {
	if src != nil {
		*dst = *src
	}
}

// merge copies src over dst, allocating dst when needed so that a Server
// never shares a map with its File.
func merge[V any](dst, src map[string]V) map[string]V {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = make(map[string]V, len(src))
	}
	maps.Copy(dst, src)
	return dst
}
