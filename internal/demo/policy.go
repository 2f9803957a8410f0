package demo

import "context"

// policy is act 3: tool availability and discovery. Filled in with the
// tools CLI.
func (d *demo) policy(ctx context.Context) error { return nil }
