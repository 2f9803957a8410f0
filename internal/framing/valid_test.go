package framing

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPeekValidAgreesWithEncodingJSON(t *testing.T) {
	tests := []struct {
		name string
		line string
	}{
		{name: "request", line: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,-2.5e+3,true,false,null,"\u00e9\n"]}}}`},
		{name: "bad escape", line: `{"id":1,"method":"m","params":{"s":"\x"}}`},
		{name: "short unicode escape", line: `{"id":1,"method":"m","params":"\u12"}`},
		{name: "leading zero", line: `{"id":01,"method":"m"}`},
		{name: "bare minus", line: `{"id":-,"method":"m"}`},
		{name: "fraction without digits", line: `{"id":1.,"method":"m"}`},
		{name: "exponent without digits", line: `{"id":1e,"method":"m"}`},
		{name: "misspelt literal", line: `{"id":1,"method":"m","params":[nul]}`},
		{name: "trailing comma", line: `{"id":1,"method":"m","params":[1,]}`},
		{name: "missing colon nested", line: `{"id":1,"method":"m","params":{"a" 1}}`},
		{name: "wrong closer", line: `{"id":1,"method":"m","params":[1}}`},
		{name: "garbage after a batch", line: `[{"id":1,"method":"m"}] x`},
		{name: "invalid UTF-8 is valid JSON", line: "{\"id\":1,\"method\":\"m\",\"params\":\"\xff\"}"},
		{name: "ambiguous but valid", line: `{"id":1,"id":2,"method":"m"}`},
		{name: "nesting at the limit", line: `{"id":1,"method":"m","params":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + `}`},
		{name: "nesting past the limit", line: `{"id":1,"method":"m","params":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkPeekValid(t, []byte(tt.line))
		})
	}
}

// checkPeekValid holds PeekValid to json.Valid and to Peek's envelope.
func checkPeekValid(t *testing.T, line []byte) {
	env, err := PeekValid(line)
	valid := json.Valid(line)
	top := bytes.TrimLeft(line, " \t\r\n")
	switch {
	case err == nil || errors.Is(err, ErrAmbiguous):
		require.True(t, valid, "PeekValid accepted invalid JSON %q", line)
	case valid && len(top) > 0 && (top[0] == '{' || top[0] == '['):
		// Valid JSON refused only for what Peek refuses in valid JSON.
		require.ErrorContains(t, err, "method is not a string", "PeekValid refused valid JSON %q", line)
	}
	if valid {
		penv, perr := Peek(line)
		assert.Equal(t, perr, err, "same verdict as Peek on valid JSON")
		assert.Equal(t, penv, env, "same envelope as Peek")
	}
}

// FuzzPeekValid compares the one-pass validator with encoding/json on any
// input, valid or not.
func FuzzPeekValid(f *testing.F) {
	seedGolden(f)
	for _, s := range []string{`{}`, `[]`, `{"id":1e5}`, `{"a":"\ud800"}`, `{"a":[{}]}`, `[1,2] `, `{"id":-0.0E-0}`, "{\"a\":\"\t\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		checkPeekValid(t, line)
	})
}
