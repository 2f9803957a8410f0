package telemetry

import (
	"context"
	"strconv"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/mcpwrap/mcpwrap/middleware"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// Metrics records the conventions' MCP metrics and mcpwrap's own, named in
// their style (see README, Metrics). A nil *Metrics records nothing.
// Make one with [NewMetrics]; it is safe for concurrent use.
type Metrics struct {
	serverDuration metric.Float64Histogram // mcp.server.operation.duration: toward the client
	clientDuration metric.Float64Histogram // mcp.client.operation.duration: toward the upstream
	sessionServer  metric.Float64Histogram // mcp.server.session.duration
	rejections     metric.Int64Counter     // mcpwrap.tool.rejections {status}
	dials          metric.Int64Counter     // mcpwrap.upstream.dials {class}: loads' connection attempts
	inFlight       metric.Int64UpDownCounter
	bytes          metric.Int64Counter // mcpwrap.relayed.bytes {direction}
	signIns        metric.Int64Counter // mcpwrap.sign_ins {outcome}
	refreshes      metric.Int64Counter // mcpwrap.sign_in.refreshes {outcome}
	loads          metric.Int64Counter // mcpwrap.upstream.loads {class}
	catalog        metric.Int64Gauge   // mcpwrap.catalog.tools

	dirs [4]metric.AddOption // bytes' attributes, by direction (see relayed)

	mu       sync.Mutex
	sessions map[*middleware.Session]string // for the observed gauges, by server
}

// NewMetrics makes the instruments on meter and registers the gauges read
// from the Sessions tracked (see [Metrics.Track]).
func NewMetrics(meter metric.Meter) (*Metrics, error) {
	m := &Metrics{sessions: map[*middleware.Session]string{}}
	var errs [20]error
	buckets := metric.WithExplicitBucketBoundaries(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
	m.serverDuration, errs[0] = meter.Float64Histogram("mcp.server.operation.duration", metric.WithUnit("s"), buckets,
		metric.WithDescription("MCP request duration as observed on the receiver from the time it was received until the result is sent."))
	m.clientDuration, errs[1] = meter.Float64Histogram("mcp.client.operation.duration", metric.WithUnit("s"), buckets,
		metric.WithDescription("The duration of the MCP request as observed on the sender from the time it was sent until the response is received."))
	m.sessionServer, errs[2] = meter.Float64Histogram("mcp.server.session.duration", metric.WithUnit("s"), buckets,
		metric.WithDescription("The duration of the MCP session as observed on the MCP server."))
	m.rejections, errs[3] = meter.Int64Counter("mcpwrap.tool.rejections", metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls mcpwrap answered itself with a status (a locked tool, the server not available), by status."))
	m.dials, errs[4] = meter.Int64Counter("mcpwrap.upstream.dials", metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts to start or connect to the server, by outcome class; more than one per load are retries."))
	m.inFlight, errs[5] = meter.Int64UpDownCounter("mcpwrap.requests.in_flight", metric.WithUnit("{request}"),
		metric.WithDescription("Client requests read and not answered yet, held or relayed."))
	m.bytes, errs[6] = meter.Int64Counter("mcpwrap.relayed.bytes", metric.WithUnit("By"),
		metric.WithDescription("Bytes of messages read and written, by side and direction."))
	m.signIns, errs[7] = meter.Int64Counter("mcpwrap.sign_ins", metric.WithUnit("{sign_in}"),
		metric.WithDescription("OAuth sign-ins, by outcome."))
	m.refreshes, errs[12] = meter.Int64Counter("mcpwrap.sign_in.refreshes", metric.WithUnit("{refresh}"),
		metric.WithDescription("Refreshes of a sign-in's token, by outcome: ok, failed (the token kept for the next try), refused (a new sign-in is needed)."))
	m.loads, errs[13] = meter.Int64Counter("mcpwrap.upstream.loads", metric.WithUnit("{load}"),
		metric.WithDescription("Loads of the server (handshake and first catalog, with their retries), by the class they ended with."))
	m.catalog, errs[14] = meter.Int64Gauge("mcpwrap.catalog.tools", metric.WithUnit("{tool}"),
		metric.WithDescription("Tools in the server's catalog as last loaded, before the tool policy."))
	restarts, err := meter.Int64ObservableCounter("mcpwrap.upstream.restarts", metric.WithUnit("{restart}"),
		metric.WithDescription("Restarts of the server after a crash."))
	errs[8] = err
	status, err := meter.Int64ObservableGauge("mcpwrap.upstream.status", metric.WithUnit("{session}"),
		metric.WithDescription("Sessions by their server's load status class (available, transient, permanent, denied, or idle: not started yet)."))
	errs[9] = err
	sessions, err := meter.Int64ObservableUpDownCounter("mcpwrap.sessions", metric.WithUnit("{session}"),
		metric.WithDescription("Relay sessions open (one per --listen HTTP session, one for stdio)."))
	errs[10] = err
	_, errs[11] = meter.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		m.mu.Lock()
		defer m.mu.Unlock()
		type key struct{ server, class string }
		classes := map[key]int64{}
		restartsBy := map[string]int64{}
		open := map[string]int64{}
		for s, server := range m.sessions {
			classes[key{server, s.Status().Class.String()}]++
			restartsBy[server] += int64(s.Stats().Restarts)
			open[server]++
		}
		for k, n := range classes {
			obs.ObserveInt64(status, n, metric.WithAttributes(attribute.String("mcpwrap.server", k.server), attribute.String("mcpwrap.class", k.class)))
		}
		for server, n := range restartsBy {
			obs.ObserveInt64(restarts, n, metric.WithAttributes(attribute.String("mcpwrap.server", server)))
		}
		for server, n := range open {
			obs.ObserveInt64(sessions, n, metric.WithAttributes(attribute.String("mcpwrap.server", server)))
		}
		return nil
	}, restarts, status, sessions)
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	for i := range m.dirs {
		m.dirs[i] = metric.WithAttributeSet(attribute.NewSet(
			attribute.String("mcpwrap.side", [2]string{"upstream", "client"}[i>>1]),
			attribute.String("mcpwrap.direction", [2]string{"out", "in"}[i&1])))
	}
	return m, nil
}

// Track adds s to the gauges until the returned func is called. A
// Session's restarts are counted while it is tracked.
func (m *Metrics) Track(server string, s *middleware.Session) (untrack func()) {
	if m == nil {
		return func() {}
	}
	m.mu.Lock()
	m.sessions[s] = server
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		delete(m.sessions, s)
		m.mu.Unlock()
	}
}

// SignedIn counts a sign-in that ended with err.
func (m *Metrics) SignedIn(server string, err error) {
	if m == nil {
		return
	}
	outcome := "ok"
	if err != nil {
		outcome = "failed"
	}
	m.signIns.Add(context.Background(), 1, metric.WithAttributes(attribute.String("mcpwrap.server", server), attribute.String("mcpwrap.outcome", outcome)))
}

// Refreshed counts a refresh of server's sign-in that ended with outcome:
// ok, failed or refused.
func (m *Metrics) Refreshed(server, outcome string) {
	if m == nil {
		return
	}
	m.refreshes.Add(context.Background(), 1, metric.WithAttributes(attribute.String("mcpwrap.server", server), attribute.String("mcpwrap.outcome", outcome)))
}

// loaded counts a load that ended with class.
func (m *Metrics) loaded(server string, class resilience.Class) {
	if m == nil {
		return
	}
	m.loads.Add(context.Background(), 1, metric.WithAttributes(attribute.String("mcpwrap.server", server), attribute.String("mcpwrap.class", class.String())))
}

// catalogSeen records the size of a catalog loaded.
func (m *Metrics) catalogSeen(server string, tools int) {
	if m == nil {
		return
	}
	m.catalog.Record(context.Background(), int64(tools), metric.WithAttributes(attribute.String("mcpwrap.server", server)))
}

func (m *Metrics) dialed(ctx context.Context, server string, err error) {
	if m == nil {
		return
	}
	class := resilience.Available.String()
	if err != nil {
		class = resilience.Classify(err).Class.String()
	}
	m.dials.Add(ctx, 1, metric.WithAttributes(attribute.String("mcpwrap.server", server), attribute.String("mcpwrap.class", class)))
}

// relayed counts n bytes read (in) or written on one side.
func (m *Metrics) relayed(_ string, client, in bool, n int) {
	if m == nil {
		return
	}
	i := 0
	if client {
		i = 2
	}
	if in {
		i++
	}
	m.bytes.Add(context.Background(), int64(n), m.dirs[i])
}

func (m *Metrics) started() {
	if m != nil {
		m.inFlight.Add(context.Background(), 1)
	}
}

// ended records a client request answered.
func (m *Metrics) ended(o *Observer, c *call) {
	if m == nil {
		return
	}
	ctx := context.Background()
	m.inFlight.Add(ctx, -1)
	attrs := operationAttrs(o, c, c.result)
	m.serverDuration.Record(ctx, c.end.Sub(c.start).Seconds(), metric.WithAttributes(attrs...))
	if c.forwarded && !c.upEnd.IsZero() {
		m.clientDuration.Record(ctx, c.upEnd.Sub(c.upStart).Seconds(), metric.WithAttributes(attrs...))
	}
	if !c.forwarded && c.status != "" && c.method == "tools/call" {
		m.rejections.Add(ctx, 1, metric.WithAttributes(attribute.String("mcpwrap.server", o.Server), attribute.String("mcpwrap.status", c.status)))
	}
}

// SessionEnded records a session's duration.
func (m *Metrics) SessionEnded(transport string, seconds float64) {
	if m == nil {
		return
	}
	m.sessionServer.Record(context.Background(), seconds, metric.WithAttributes(attribute.String("network.transport", transport)))
}

// operationAttrs are the conventions' attributes of a request, with the
// server's name.
func operationAttrs(o *Observer, c *call, r result) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		attribute.String("mcp.method.name", c.method),
		attribute.String("network.transport", o.Transport),
		attribute.String("mcpwrap.server", o.Server),
	}
	switch c.method {
	case "tools/call":
		if c.target != "" {
			attrs = append(attrs, attribute.String("gen_ai.tool.name", c.target))
		}
	case "prompts/get":
		if c.target != "" {
			attrs = append(attrs, attribute.String("gen_ai.prompt.name", c.target))
		}
	}
	switch r.outcome {
	case "error":
		attrs = append(attrs, attribute.String("error.type", strconv.Itoa(r.code)),
			attribute.String("rpc.response.status_code", strconv.Itoa(r.code)))
	case "tool_error":
		attrs = append(attrs, attribute.String("error.type", "tool_error"))
	}
	return attrs
}
