package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/mcpwrap/mcpwrap/internal/audit"
	"github.com/mcpwrap/mcpwrap/internal/auth"
	"github.com/mcpwrap/mcpwrap/internal/config"
	"github.com/mcpwrap/mcpwrap/internal/httpfront"
	"github.com/mcpwrap/mcpwrap/internal/telemetry"
	"github.com/mcpwrap/mcpwrap/middleware"
)

// observeFlags are the flags of what mcpwrap reports of its decisions.
type observeFlags struct {
	auditLog      string
	metricsListen string
	metricsPublic bool
}

func (f *observeFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&f.auditLog, "audit-log", "", "append one JSON line per decision (tool calls, toggles, approvals, sign-ins) to this file, shared by every sidecar (default from config audit_log, else none)")
	fs.StringVar(&f.metricsListen, "metrics-listen", "", "serve metrics in Prometheus text format at http://ADDR/metrics (a loopback address unless --metrics-public)")
	fs.BoolVar(&f.metricsPublic, "metrics-public", false, "let --metrics-listen take an address other machines can reach")
}

func (f *observeFlags) validate() error {
	if f.metricsListen != "" && !f.metricsPublic && !httpfront.IsLoopbackAddr(f.metricsListen) {
		return fmt.Errorf("--metrics-listen %s is reachable from other machines: add --metrics-public to mean it, or listen on 127.0.0.1", f.metricsListen)
	}
	return nil
}

// otelEnvSet reports whether the standard environment asks for an
// exporter of signal ("TRACES", "METRICS"): its OTEL_<signal>_EXPORTER is
// set and not "none", or an OTLP endpoint is. Unset, nothing is exported
// and no exporter runs (the SDK's own default would be OTLP).
func otelEnvSet(signal string) bool {
	if v, ok := os.LookupEnv("OTEL_" + signal + "_EXPORTER"); ok {
		return v != "none" && v != "console" // console writes to stdout, the protocol channel
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != ""
}

// observability is what a wrap process reports to; its zero value reports
// nothing and decorates nothing.
type observability struct {
	audit    *audit.Log
	metrics  *telemetry.Metrics
	traces   *telemetry.Traces
	shutdown []func(context.Context) error // in order
	logger   *slog.Logger
}

// openObservability opens what the flags, the config and the OTEL_*
// environment ask for. A failure is logged, and that part stays off: the
// relay runs regardless, except that a --metrics-listen address that
// cannot be listened on is an error.
func openObservability(ctx context.Context, f observeFlags, srv config.Server, logger *slog.Logger) (*observability, error) {
	ob := &observability{logger: logger}
	if path := cmp.Or(f.auditLog, srv.AuditLog); path != "" {
		l, err := audit.Open(path, "mcpwrap")
		if err != nil {
			logger.Error("no audit log", "error", err)
		} else {
			ob.audit = l
		}
	}
	ob.openTraces(ctx, logger)
	if err := ob.openMetrics(ctx, f, logger); err != nil {
		ob.Close()
		return nil, err
	}
	return ob, nil
}

// openTraces starts the tracer provider when the OTEL_* environment asks
// for an exporter (autoexport reads which, where and how; the SDK reads
// OTEL_TRACES_SAMPLER).
func (ob *observability) openTraces(ctx context.Context, logger *slog.Logger) {
	if !otelEnvSet("TRACES") {
		return
	}
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		logger.Error("no trace export", "error", err)
		return
	}
	res, err := newResource(ctx)
	if err != nil {
		logger.Warn("telemetry resource", "error", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	ob.shutdown = append(ob.shutdown, tp.Shutdown)
	ob.traces = telemetry.NewTraces(tp)
}

// openMetrics starts the meter provider when metrics are asked for: a
// Prometheus endpoint (pulled: no goroutine but the HTTP server's), and
// the exporter OTEL_METRICS_EXPORTER names (through autoexport).
func (ob *observability) openMetrics(ctx context.Context, f observeFlags, logger *slog.Logger) error {
	pushed := otelEnvSet("METRICS")
	if f.metricsListen == "" && !pushed {
		return nil
	}
	res, err := newResource(ctx)
	if err != nil {
		logger.Warn("telemetry resource", "error", err)
	}
	opts := []sdkmetric.Option{sdkmetric.WithResource(res)}
	if pushed {
		r, err := autoexport.NewMetricReader(ctx)
		if err != nil {
			logger.Error("no metrics export", "error", err)
		} else {
			opts = append(opts, sdkmetric.WithReader(r))
		}
	}
	var handler http.Handler
	if f.metricsListen != "" {
		reg := prometheus.NewRegistry()
		exp, err := otelprom.New(otelprom.WithRegisterer(reg))
		if err != nil {
			return err
		}
		opts = append(opts, sdkmetric.WithReader(exp))
		handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	}
	mp := sdkmetric.NewMeterProvider(opts...)
	ob.shutdown = append(ob.shutdown, mp.Shutdown)
	m, err := telemetry.NewMetrics(mp.Meter("github.com/mcpwrap/mcpwrap"))
	if err != nil {
		return err
	}
	ob.metrics = m
	if handler == nil {
		return nil
	}
	ln, err := net.Listen("tcp", f.metricsListen)
	if err != nil {
		return fmt.Errorf("--metrics-listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", handler)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			logger.Error("metrics endpoint", "error", err)
		}
	}()
	// Shut down first: no scrape reads a provider being shut down.
	ob.shutdown = append([]func(context.Context) error{func(ctx context.Context) error {
		err := hs.Shutdown(ctx)
		<-served
		return err
	}}, ob.shutdown...)
	logger.Info("serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return nil
}

// newResource describes this process: service.name mcpwrap unless
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say otherwise (read
// after, so they win).
func newResource(ctx context.Context) (*resource.Resource, error) {
	return resource.New(ctx, resource.WithAttributes(attribute.String("service.name", "mcpwrap")),
		resource.WithTelemetrySDK(), resource.WithFromEnv())
}

// on reports whether anything is reported.
func (ob *observability) on() bool { return ob.audit != nil || ob.metrics != nil || ob.traces != nil }

// observe decorates s's client and dialer when anything is on; transport
// is the client side's network.transport, and httpUpstream says the
// upstream is a --url server. Set s.Client and s.Dial first.
func (ob *observability) observe(s *middleware.Session, transport string, httpUpstream bool) {
	if !ob.on() {
		return // nothing added to the relay's path
	}
	o := &telemetry.Observer{Server: s.Name, Transport: transport, HTTPUpstream: httpUpstream,
		Audit: ob.audit, Metrics: ob.metrics, Traces: ob.traces}
	s.Client = o.Client(s, s.Client)
	s.Dial = o.Dial(s.Dial)
	if ob.metrics != nil {
		s.CatalogSeen = o.CatalogSeen(s.CatalogSeen)
		s.Retrier = o.Retrier(s.Retrier)
	}
}

// refreshed returns the hook that counts the refreshes of server's
// sign-in by outcome; nil when there are no metrics.
func (ob *observability) refreshed(server string) func(error) {
	if ob.metrics == nil {
		return nil
	}
	return func(err error) {
		outcome := "ok"
		switch {
		case errors.Is(err, auth.ErrNoToken):
			outcome = "refused"
		case err != nil:
			outcome = "failed"
		}
		ob.metrics.Refreshed(server, outcome)
	}
}

// signedIn returns the hook that reports the sign-ins to server; nil when
// nothing is reported.
func (ob *observability) signedIn(server string) func(error) {
	if !ob.on() {
		return nil
	}
	return func(err error) {
		ob.metrics.SignedIn(server, err)
		if ob.audit == nil {
			return
		}
		r := audit.Record{Event: audit.EventSignIn, Server: server, Action: "ok"}
		if err != nil {
			r.Action, r.Detail = "failed", err.Error() // redacted by Write
		}
		_ = ob.audit.Write(r)
	}
}

// Close stops the endpoint, flushes the exporters and closes the audit
// log, within 5 s.
func (ob *observability) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var errs []error
	for _, f := range ob.shutdown {
		errs = append(errs, f(ctx))
	}
	errs = append(errs, ob.audit.Close())
	return errors.Join(errs...)
}
