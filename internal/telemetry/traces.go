package telemetry

import (
	"context"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/framing"
)

// Traces records spans. A nil *Traces records nothing.
type Traces struct{}

func (t *Traces) dialed(ctx context.Context, server string, start, end time.Time, err error) {}
func (t *Traces) serverStart(o *Observer, c *call)                                           {}
func (t *Traces) clientStart(ctx context.Context, o *Observer, c *call, env framing.Envelope, msg []byte) (context.Context, []byte) {
	return ctx, msg
}

func traceMeta(params []byte) map[string]string { return nil }
