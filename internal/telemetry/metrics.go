package telemetry

import "context"

// Metrics records mcpwrap's metrics. A nil *Metrics records nothing.
type Metrics struct{}

func (m *Metrics) dialed(ctx context.Context, server string, err error) {}
func (m *Metrics) relayed(server string, client, read bool, n int)      {}
func (m *Metrics) ended(o *Observer, c *call)                           {}
