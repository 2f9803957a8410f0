package resilience

import (
	"errors"
	"fmt"
	"strconv"
)

// Class is the outcome class of one attempt to load an upstream.
//
// The zero Class is [Permanent]: a failure that nobody classified is never
// retried and never reported as "still starting up".
type Class int

// The load classes: the four a load ends in, and [Idle] before one
// begins. Only [Transient] is retried automatically.
const (
	// Permanent failures need a human: a wrong command, URL, certificate or
	// configuration. They are not retried automatically.
	Permanent Class = iota
	// Transient failures are expected to clear by themselves: timeouts,
	// resets, 5xx, a crash after the upstream had been ready.
	Transient
	// Denied means the upstream refused the configured credentials. It is
	// never retried, because retrying cannot change the answer.
	Denied
	// Available means the upstream loaded: handshake and catalog done.
	Available
	// Idle means no load has begun, and none will until the upstream is
	// needed: it is started on the client's first request that needs it
	// (a Session whose Dialer is middleware.OnDemand). Neither a failure
	// nor available; nothing is retried.
	Idle
)

var classNames = [...]string{
	Permanent: "permanent",
	Transient: "transient",
	Denied:    "denied",
	Available: "available",
	Idle:      "idle",
}

// ErrUnknownClass is returned by [Class.MarshalText] and
// [Class.UnmarshalText] for a value outside the classes.
var ErrUnknownClass = errors.New("resilience: unknown class")

// String returns the lowercase class word: "available", "transient",
// "permanent", "denied" or "idle"; "Class(N)" for an invalid value.
func (c Class) String() string {
	if c.valid() {
		return classNames[c]
	}
	return "Class(" + strconv.Itoa(int(c)) + ")"
}

// Retryable reports whether failures of this class are retried
// automatically. Only [Transient] is.
func (c Class) Retryable() bool { return c == Transient }

// MarshalText encodes the class as its lowercase word, so it appears as
// "transient" in JSON and structured logs.
func (c Class) MarshalText() ([]byte, error) {
	if !c.valid() {
		return nil, fmt.Errorf("%w: %d", ErrUnknownClass, int(c))
	}
	return []byte(classNames[c]), nil
}

// UnmarshalText decodes a lowercase class word as written by
// [Class.MarshalText].
func (c *Class) UnmarshalText(text []byte) error {
	for i, name := range classNames {
		if string(text) == name {
			*c = Class(i)
			return nil
		}
	}
	return fmt.Errorf("%w: %q", ErrUnknownClass, text)
}

func (c Class) valid() bool { return c >= 0 && int(c) < len(classNames) }
