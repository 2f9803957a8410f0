package clientconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzRoundTrip checks, for any JSON document formatted the usual way, that
// Install is idempotent and that Uninstall gives back the original bytes
// (unless it had wrapped entries already: Uninstall unwraps those too).
func FuzzRoundTrip(f *testing.F) {
	originals, err := filepath.Glob("testdata/*/original.json")
	require.NoError(f, err)
	for _, path := range originals {
		data, err := os.ReadFile(path)
		require.NoError(f, err)
		f.Add(data)
	}
	f.Add([]byte(`{"mcpServers":{"a":{"url":"u","headers":{"K":"v"},"env":{"MCPWRAP_HDR_A_K":"x"}}}}`))
	f.Add([]byte(`{"mcpServers":{"a":{"url":"u","env":{"MCPWRAP_URL_A":"x"},"headers":{}}}}`))
	f.Add([]byte(`{"projects":{"/p":{"mcpServers":{"s":{"args":["x"],"command":"c","type":"stdio"}}}}}`))

	f.Fuzz(func(t *testing.T, data []byte) {
		_, _, _ = Uninstall(data, Options{}) // never panics, whatever the input
		if original, ok := canonical(data); ok {
			checkRoundTrip(t, original)
		}
	})
}

// FuzzEntryRoundTrip is FuzzRoundTrip for one server entry built from
// parts: which keys it has, in which order, with which strings; the byte
// mutations of FuzzRoundTrip rarely find such shapes.
func FuzzEntryRoundTrip(f *testing.F) {
	f.Add(uint8(0b1000011), uint64(0), "npx", "srv", "Authorization", "http")
	f.Add(uint8(0b1111100), uint64(7), "https://h/mcp", "Bearer x", "X-Key", "sse")
	f.Add(uint8(0b0110100), uint64(3), "https://h/mcp", "", "A", "http")
	f.Add(uint8(0b0000011), uint64(1), "srv", "", "", "stdio")
	f.Add(uint8(0b1111111), uint64(42), "mcpwrap", "--", "A", "stdio")
	f.Fuzz(func(t *testing.T, keys uint8, order uint64, s1, s2, header, typ string) {
		str := func(s string) string { return string(encodeString(s)) }
		// Bit 7 of keys fills args, headers and env; bits 0 to 6 pick the keys.
		var args, headers, env string
		if keys&0x80 != 0 {
			args = str(s2)
			headers = str(header) + ":" + str(s2)
			env = str(headerEnvPrefix+"S_"+envWord(header)) + ":" + str(s1) // taken: Install picks another
		}
		parts := []string{
			`"command":` + str(s1),
			`"args":[` + args + `]`,
			`"type":` + str(typ),
			`"url":` + str(s1),
			`"headers":{` + headers + `}`,
			`"env":{` + env + `}`,
			`"other":1`,
		}
		var fields []string
		for i, p := range parts {
			if keys&(1<<i) != 0 {
				fields = append(fields, p)
			}
		}
		for i := len(fields) - 1; i > 0; i-- { // shuffle by order
			j := int(order % uint64(i+1))
			order /= uint64(i + 1)
			fields[i], fields[j] = fields[j], fields[i]
		}
		doc := `{"mcpServers":{"s":{` + strings.Join(fields, ",") + `}}}`
		original, ok := canonical([]byte(doc))
		require.True(t, ok, doc)
		checkRoundTrip(t, original)
	})
}

// checkRoundTrip checks that installing into original twice changes it once,
// and that uninstalling gives it back.
func checkRoundTrip(t *testing.T, original []byte) {
	t.Helper()
	opts := Options{Mcpwrap: "/usr/local/bin/mcpwrap"}
	installed, _, err := Install(original, opts)
	if err != nil {
		var parseErr *ParseError
		require.ErrorAs(t, err, &parseErr, "a valid document fails only for its shape")
		return
	}
	again, _, err := Install(installed, opts)
	require.NoError(t, err)
	require.Equal(t, string(installed), string(again), "install is idempotent")

	_, prewrapped, err := Uninstall(original, Options{})
	require.NoError(t, err)
	if len(serversWith(Unwrap, prewrapped)) > 0 {
		return // uninstall unwraps those too
	}
	restored, _, err := Uninstall(installed, Options{})
	require.NoError(t, err)
	require.Equal(t, string(original), string(restored), "uninstall gives back the original bytes")
}

// canonical re-encodes a JSON document the usual way: 2-space indentation,
// keys in their order, strings as this package encodes them, a trailing
// newline. ok is false when data is not one JSON document.
func canonical(data []byte) (out []byte, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var buf bytes.Buffer
	if writeCanonical(&buf, dec, "\n") != nil {
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false
	}
	buf.WriteByte('\n')
	return buf.Bytes(), true
}

func writeCanonical(buf *bytes.Buffer, dec *json.Decoder, newline string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok := tok.(type) {
	case json.Delim:
		buf.WriteByte(byte(tok))
		n := 0
		for ; dec.More(); n++ {
			if n > 0 {
				buf.WriteByte(',')
			}
			buf.WriteString(newline + "  ")
			if tok == '{' {
				key, err := dec.Token()
				if err != nil {
					return err
				}
				buf.Write(encodeString(key.(string)))
				buf.WriteString(": ")
			}
			if err := writeCanonical(buf, dec, newline+"  "); err != nil {
				return err
			}
		}
		end, err := dec.Token()
		if err != nil {
			return err
		}
		if n > 0 {
			buf.WriteString(newline)
		}
		buf.WriteByte(byte(end.(json.Delim)))
	case string:
		buf.Write(encodeString(tok))
	default: // json.Number, bool or nil
		b, err := json.Marshal(tok)
		if err != nil {
			return err
		}
		buf.Write(b)
	}
	return nil
}

// FuzzMCPRemoteRoundTrip checks, for any mcp-remote command line (its
// arguments separated by NUL), that Install converts it or leaves it an
// mcp-remote child, never with a literal header value or client secret on
// mcpwrap's command line, and that Uninstall gives back the original bytes.
func FuzzMCPRemoteRoundTrip(f *testing.F) {
	f.Add("npx", "-y\x00mcp-remote\x00https://h/mcp", "")
	f.Add("npx", "mcp-remote@0.1.29\x00https://h/sse\x00--header\x00Authorization: Bearer s3cret\x00--transport\x00sse-only", `"AUTH":"x"`)
	f.Add("mcp-remote", "http://h:1/mcp\x009696\x00--allow-http\x00--static-oauth-client-info\x00{\"client_id\":\"a\",\"client_secret\":\"s3cret\"}", "")
	f.Add("bunx", "mcp-remote\x00https://h/mcp\x00--static-oauth-client-info\x00{\"client_id\":\"a\",\"client_secret\":\"${S}\"}", `"S":"s3cret"`)
	f.Add("npx", "mcp-remote\x00https://h/mcp\x00--resource\x00https://t/", "")
	f.Add("npx", "mcp-remote\x00https://h/mcp\x00--header\x00X:${V}\x00--auth-timeout\x0060\x00--debug", `"MCPWRAP_URL_S":"taken"`)
	f.Fuzz(func(t *testing.T, command, args, env string) {
		var quoted []string
		for _, a := range strings.Split(args, "\x00") {
			quoted = append(quoted, string(encodeString(a)))
		}
		doc := `{"mcpServers":{"s":{"command":` + string(encodeString(command)) + `,"args":[` +
			strings.Join(quoted, ",") + `],"env":{` + env + `}}}}`
		original, ok := canonical([]byte(doc))
		if !ok {
			return
		}
		checkRoundTrip(t, original)

		installed, plan, err := Install(original, Options{Mcpwrap: "/usr/local/bin/mcpwrap"})
		if err != nil || len(plan) != 1 || !strings.Contains(plan[0].Detail, "converted to native --url") {
			return
		}
		_, wrappedArgs, ok := stringArray(serverEntry(t, installed, "s"), "args")
		require.True(t, ok)
		_, origArgs, _ := stringArray(serverEntry(t, original, "s"), "args")
		remoteArgs, _ := mcpRemoteArgs(command, origArgs)
		r, err := parseMCPRemote(remoteArgs)
		require.NoError(t, err)
		for _, a := range wrappedArgs {
			for _, h := range r.headers {
				if h[1] != "" && !strings.Contains(h[1], "${") {
					require.NotContains(t, a, h[1], "a literal header value stays off the command line")
				}
			}
			if r.clientSecret != "" && envRefPattern.FindStringSubmatch(r.clientSecret) == nil {
				require.NotContains(t, a, r.clientSecret, "a literal client secret stays off the command line")
			}
		}
	})
}

// serverEntry returns the entry named key of doc's mcpServers.
func serverEntry(t *testing.T, doc []byte, key string) object {
	t.Helper()
	top, ok := members(doc, 0)
	require.True(t, ok)
	for _, m := range top {
		if m.key != "mcpServers" {
			continue
		}
		entries, ok := members(doc, m.valueStart)
		require.True(t, ok)
		for _, e := range entries {
			if e.key == key {
				o, ok := parseObject(doc[e.valueStart:e.valueEnd])
				require.True(t, ok)
				return o
			}
		}
	}
	t.Fatalf("no server %q", key)
	return nil
}
