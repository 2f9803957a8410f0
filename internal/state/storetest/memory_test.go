package storetest

import (
	"testing"

	"github.com/mcpwrap/mcpwrap/internal/state"
)

func TestMemory(t *testing.T) {
	Run(t, func(t *testing.T) Backend {
		m := &Memory{}
		return Backend{
			Open:    func(*testing.T) state.Store { return m },
			Corrupt: func(_ *testing.T, server string, doc []byte) { m.Corrupt(server, doc) },
		}
	})
}
