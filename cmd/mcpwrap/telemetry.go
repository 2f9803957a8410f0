package main

import (
	"cmp"
	"flag"
	"log/slog"

	"github.com/mcpwrap/mcpwrap/internal/audit"
	"github.com/mcpwrap/mcpwrap/internal/config"
	"github.com/mcpwrap/mcpwrap/internal/telemetry"
	"github.com/mcpwrap/mcpwrap/middleware"
)

// observeFlags are the flags of what mcpwrap reports of its decisions.
type observeFlags struct {
	auditLog string
}

func (f *observeFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&f.auditLog, "audit-log", "", "append one JSON line per decision (tool calls, toggles, approvals, sign-ins) to this file, shared by every sidecar (default from config audit_log, else none)")
}

// observability is what a wrap process reports to; its zero value reports
// nothing and decorates nothing.
type observability struct {
	audit *audit.Log
}

// openObservability opens what the flags and the config ask for. A
// failure is logged, and that part stays off: the relay runs regardless.
func openObservability(f observeFlags, srv config.Server, logger *slog.Logger) *observability {
	ob := &observability{}
	if path := cmp.Or(f.auditLog, srv.AuditLog); path != "" {
		l, err := audit.Open(path, "mcpwrap")
		if err != nil {
			logger.Error("no audit log", "error", err)
		} else {
			ob.audit = l
		}
	}
	return ob
}

// on reports whether anything is reported.
func (ob *observability) on() bool { return ob.audit != nil }

// observe decorates s's client and dialer when anything is on; transport
// is the client side's network.transport. Set s.Client and s.Dial first.
func (ob *observability) observe(s *middleware.Session, transport string) {
	if !ob.on() {
		return // nothing added to the relay's path
	}
	o := &telemetry.Observer{Server: s.Name, Transport: transport, Audit: ob.audit}
	s.Client = o.Client(s.Client)
	s.Dial = o.Dial(s.Dial)
}

// signedIn returns the hook that audits the sign-ins to server; nil when
// there is no audit log.
func (ob *observability) signedIn(server string) func(error) {
	if ob.audit == nil {
		return nil
	}
	return func(err error) {
		r := audit.Record{Event: audit.EventSignIn, Server: server, Action: "ok"}
		if err != nil {
			r.Action, r.Detail = "failed", err.Error() // redacted by Write
		}
		_ = ob.audit.Write(r)
	}
}

// Close flushes and closes what is open.
func (ob *observability) Close() error {
	return ob.audit.Close()
}
