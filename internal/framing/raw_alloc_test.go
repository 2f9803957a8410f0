package framing

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Reading one member of an object, or going through them all, allocates
// nothing: these run on every message a traced relay passes.
func TestMemberReadsAllocateNothing(t *testing.T) {
	obj := []byte(`{"name":"echo","arguments":{"text":"ping"},"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","progressToken":7}}`)
	lookups := testing.AllocsPerRun(100, func() {
		if _, found, err := LookupMember(obj, "_meta"); !found || err != nil {
			t.Fatal("no _meta")
		}
	})
	each := testing.AllocsPerRun(100, func() {
		n := 0
		_ = EachMember(obj, func(Member) bool { n++; return true })
	})
	assert.Zero(t, lookups, "LookupMember")
	assert.Zero(t, each, "EachMember")
}
