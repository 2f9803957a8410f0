package toolscli

import (
	"context"
	"encoding/json"
	"github.com/mcpwrap/mcpwrap/internal/audit"
	"sync"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/config"
	"github.com/mcpwrap/mcpwrap/internal/policy"
	"github.com/mcpwrap/mcpwrap/internal/state"
)

// Tools is the one implementation of what `mcpwrap tools` and the control
// panel (`mcpwrap ui`) do: list the tools of the servers with their
// statuses, enable, disable and approve them. It judges tools exactly as a
// sidecar does, from one loaded config file and the state store.
//
// A Tools is safe for concurrent use; its config is the one it was made
// with (make a new Tools to see a newer file). Writes are serialised by the
// store, also across processes.
type Tools struct {
	config *config.File
	store  state.Store
	now    func() time.Time
	cache  *DefinitionCache
	audit  *audit.Log // where the changes are audited; nil: nowhere
}

// WithAudit returns the same tools recording every change they save (a
// toggle, an approval) in log, nil for none.
func (c *Tools) WithAudit(log *audit.Log) *Tools {
	cp := *c
	cp.audit = log
	return &cp
}

// WithCache returns the same tools reading definitions through cache, so
// that a caller that lists the same catalogs again and again (the panel's
// live view) parses and hashes each definition once.
func (c *Tools) WithCache(cache *DefinitionCache) *Tools {
	cp := *c
	cp.cache = cache
	return &cp
}

// maxCached bounds the definitions a DefinitionCache keeps; past it the
// cache starts afresh.
const maxCached = 50_000

// DefinitionCache keeps definitions as a sidecar reads them (parsed,
// hashed, or refused), by name and bytes. The zero value is ready; a nil
// cache parses every time. It is safe for concurrent use.
type DefinitionCache struct {
	mu sync.Mutex
	m  map[cacheKey]toolInfo
}

type cacheKey struct {
	name, def string
	inCatalog bool
}

func (dc *DefinitionCache) describe(name string, def json.RawMessage, inCatalog bool) toolInfo {
	if dc == nil || def == nil {
		return describe(name, def, inCatalog)
	}
	k := cacheKey{name: name, def: string(def), inCatalog: inCatalog}
	dc.mu.Lock()
	info, ok := dc.m[k]
	dc.mu.Unlock()
	if ok {
		return info
	}
	info = describe(name, def, inCatalog)
	dc.mu.Lock()
	if dc.m == nil || len(dc.m) >= maxCached {
		dc.m = make(map[cacheKey]toolInfo)
	}
	dc.m[k] = info
	dc.mu.Unlock()
	return info
}

// NewTools returns the tools of the servers file configures and store
// keeps state for. A nil file is no config file (every default); a nil now
// means time.Now.
func NewTools(file *config.File, store state.Store, now func() time.Time) *Tools {
	if now == nil {
		now = time.Now
	}
	return &Tools{config: file, store: store, now: now}
}

// Config returns the config file the tools are judged by.
func (c *Tools) Config() *config.File { return c.config }

// Tool is one tool of a server as the panel and `tools list` show it.
type Tool struct {
	Name string
	// Status is the tool's one status, as a sidecar computes it.
	Status      policy.Status
	Description string
	ReadOnly    bool
	// InCatalog is false for a tool only named in the user's approvals or
	// disabled list; its status is what it would be if it came back.
	InCatalog bool
	// DefinitionKnown is false when neither the catalog nor an approval
	// holds the definition, so ReadOnly is unknown.
	DefinitionKnown bool
	// Refused says why a sidecar refuses the definition; "" when it does
	// not.
	Refused string
	// Lock is the status operator policy locks the tool with
	// (server_disabled or disabled_by_config), "" when it lets the tool be
	// on: a Tool with a Lock cannot be enabled by the user.
	Lock policy.Status
	// Rule names the config setting that locks it (servers.S.enabled,
	// tools.default, tools.overrides."P") and Line its line in the config
	// file (0 when it is a built-in default); set only with Lock.
	Rule string
	Line int
	// Approved is the definition the user approved and ApprovedAt when,
	// when the approval kept it; Current the definition in the last
	// catalog. Both are set only for a tool pending approval, for its diff.
	Approved   json.RawMessage
	ApprovedAt time.Time
	Current    json.RawMessage
}

// Servers returns the servers the config or the store knows, sorted.
func (c *Tools) Servers(ctx context.Context) ([]string, error) { return c.knownServers(ctx) }

// List returns every known tool of the server: those of the last catalog
// sorted by name, then those only named in the user's approvals or
// disabled list. An unknown server is an error naming the known ones.
func (c *Tools) List(ctx context.Context, server string) ([]Tool, error) {
	v, err := c.load(ctx, server)
	if err != nil {
		return nil, err
	}
	infos := v.known()
	out := make([]Tool, len(infos))
	for i, s := range v.statuses(infos) {
		info := infos[i]
		t := Tool{
			Name:            info.name,
			Status:          s,
			Description:     info.description,
			ReadOnly:        info.tool.ReadOnly,
			InCatalog:       info.inCatalog,
			DefinitionKnown: info.definition != nil,
		}
		if info.refused != nil {
			t.Refused = info.refused.Error()
		}
		if lock, _ := v.operatorLock(info); lock != "" {
			t.Lock = lock
			t.Rule, t.Line = c.rule(v, info)
		}
		if s == policy.PendingApproval {
			t.Current = info.definition
			if a, ok := v.user.Approval(info.name); ok {
				t.Approved, t.ApprovedAt = a.Definition, a.ApprovedAt
			}
		}
		out[i] = t
	}
	return out, nil
}

// rule names the config setting that locks the tool, and its line.
func (c *Tools) rule(v *serverView, info toolInfo) (string, int) {
	if !v.config.Enabled {
		return "servers." + v.name + ".enabled: false", c.config.Line(v.name, "enabled")
	}
	pattern, isOverride := v.config.Tools.Decision(info.name)
	if !isOverride {
		return "tools.default: " + string(v.config.Tools.Default), c.config.Line(v.name, "tools", "default")
	}
	return "tools.overrides." + pattern + ": false", c.config.Line(v.name, "tools", "overrides", pattern)
}
