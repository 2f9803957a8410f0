package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// eraDriver is a stdio MCP client that speaks exactly one protocol era, written out as JSON-RPC
// lines so that nothing negotiates behind its back: 2025-11-25 opens a session with initialize
// and answers the server's requests (elicitation, sampling, roots); 2026-07-28 opens with
// server/discover, puts the 2026 _meta on every request, fulfils input-required results
// (SEP-2322) and retries with the untouched requestState, and takes a server request as a
// protocol violation. It is never told which era the server speaks. Not safe for concurrent use.
type eraDriver struct {
	era   string
	proc  *process
	lines chan []byte // the server's stdout lines; closed at EOF
	id    int
	tools []string // the names tools/list gave
}

// eraCallTimeout bounds one request's answer: a peer that does not answer in this long is taken
// as hung, and the script stops.
const eraCallTimeout = 15 * time.Second

// errEraHung is a request that got no answer in eraCallTimeout, or a closed stdout.
var errEraHung = errors.New("no answer")

// startEraDriver starts argv and drives it in era.
func startEraDriver(ctx context.Context, t testing.TB, era string, env []string, argv ...string) *eraDriver {
	t.Helper()
	p := startProcess(ctx, t, processOptions{Env: env, PipeStdin: true, PipeStdout: true}, argv[0], argv[1:]...)
	d := &eraDriver{era: era, proc: p, lines: make(chan []byte)}
	go func() {
		defer close(d.lines)
		sc := bufio.NewScanner(p.Stdout)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			select {
			case d.lines <- append([]byte(nil), sc.Bytes()...):
			case <-ctx.Done():
				return
			}
		}
	}()
	return d
}

// eraMeta is the _meta every 2026-07-28 request of the driver carries.
var eraMeta = map[string]any{
	metaProtocolVersion:    protocolVersionStateless,
	metaClientInfo:         map[string]any{"name": "mcpwrap-e2e-era-driver", "version": "1.0.0"},
	metaClientCapabilities: eraCapabilities,
}

// eraCapabilities are the driver's client capabilities in either era.
var eraCapabilities = map[string]any{"elicitation": map[string]any{"form": map[string]any{}}, "sampling": map[string]any{}, "roots": map[string]any{}}

func (d *eraDriver) send(msg map[string]any) error {
	msg["jsonrpc"] = "2.0"
	line, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	_, err = d.proc.Stdin.Write(append(line, '\n'))
	return err
}

// rpcError is a JSON-RPC error answer.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("error %d: %s", e.Code, e.Message) }

// call sends method with params (a 2026 request gets the _meta; an input-required answer is
// fulfilled and the request retried with a new id) and returns the final result.
func (d *eraDriver) call(ctx context.Context, method string, params map[string]any) (json.RawMessage, error) {
	if params == nil {
		params = map[string]any{}
	}
	if d.era == protocolVersionStateless {
		params["_meta"] = eraMeta
	}
	for round := 0; round < 10; round++ {
		res, err := d.roundTrip(ctx, method, params)
		if err != nil {
			return nil, err
		}
		var ir struct {
			ResultType    string                     `json:"resultType"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  *string                    `json:"requestState"`
		}
		_ = json.Unmarshal(res, &ir)
		if ir.ResultType != "input_required" {
			return res, nil
		}
		if d.era != protocolVersionStateless {
			return nil, fmt.Errorf("%s: an input-required result to a %s client", method, d.era)
		}
		responses := map[string]any{}
		for key, raw := range ir.InputRequests {
			var req struct {
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			_ = json.Unmarshal(raw, &req)
			answer, ok := eraAnswer(req.Method, req.Params)
			if !ok {
				return nil, fmt.Errorf("%s: input request %q for %q", method, key, req.Method)
			}
			responses[key] = answer
		}
		params["inputResponses"] = responses
		if ir.RequestState != nil {
			params["requestState"] = *ir.RequestState
		} else {
			delete(params, "requestState")
		}
	}
	return nil, fmt.Errorf("%s: still input-required after 10 rounds", method)
}

// roundTrip sends one request and waits for its answer, answering (2025) or refusing (2026) the
// server's requests meanwhile.
func (d *eraDriver) roundTrip(ctx context.Context, method string, params map[string]any) (json.RawMessage, error) {
	d.id++
	id := fmt.Sprint(d.id)
	if err := d.send(map[string]any{"id": d.id, "method": method, "params": params}); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", method, errEraHung, err)
	}
	timeout := time.NewTimer(eraCallTimeout)
	defer timeout.Stop()
	var violation error
	for {
		select {
		case line, ok := <-d.lines:
			if !ok {
				return nil, fmt.Errorf("%s: %w: stdout closed", method, errEraHung)
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
				Result json.RawMessage `json:"result"`
				Error  *rpcError       `json:"error"`
			}
			if json.Unmarshal(line, &m) != nil {
				continue
			}
			switch {
			case m.Method != "" && m.ID != nil: // a request from the server
				answer, ok := eraAnswer(m.Method, m.Params)
				if d.era == protocolVersionStateless {
					violation = fmt.Errorf("%s: the server sent a 2026-07-28 client a %s request", method, m.Method)
					ok = false
				}
				reply := map[string]any{"id": m.ID}
				if ok {
					reply["result"] = answer
				} else {
					reply["error"] = map[string]any{"code": -32601, "message": "Method not found"}
				}
				if err := d.send(reply); err != nil {
					return nil, fmt.Errorf("%s: %w: %v", method, errEraHung, err)
				}
			case m.Method == "" && string(m.ID) == id:
				if violation != nil {
					return nil, violation
				}
				if m.Error != nil {
					return nil, fmt.Errorf("%s: %w", method, m.Error)
				}
				return m.Result, nil
			}
		case <-timeout.C:
			return nil, fmt.Errorf("%s: %w in %s", method, errEraHung, eraCallTimeout)
		case <-ctx.Done():
			return nil, fmt.Errorf("%s: %w: %v", method, errEraHung, ctx.Err())
		}
	}
}

// eraAnswerText is what the driver's user and model say, for a step to find in the tool's answer.
const eraAnswerText = "era-driver-answer"

// eraAnswer is the driver's answer to a server request (2025) or input request (2026): a user who
// accepts an elicitation, filling in every field it asks for, and a model that says
// eraAnswerText.
func eraAnswer(method string, params json.RawMessage) (any, bool) {
	switch method {
	case "elicitation/create":
		var p struct {
			RequestedSchema struct {
				Properties map[string]struct {
					Type string `json:"type"`
				} `json:"properties"`
			} `json:"requestedSchema"`
		}
		_ = json.Unmarshal(params, &p)
		content := map[string]any{}
		for name, prop := range p.RequestedSchema.Properties {
			switch prop.Type {
			case "integer", "number":
				content[name] = 1
			case "boolean":
				content[name] = true
			default:
				content[name] = eraAnswerText
			}
		}
		return map[string]any{"action": "accept", "content": content}, true
	case "sampling/createMessage":
		return map[string]any{"role": "assistant", "model": "e2e", "content": map[string]any{"type": "text", "text": eraAnswerText}}, true
	case "roots/list":
		return map[string]any{"roots": []any{}}, true
	case "ping":
		return map[string]any{}, true
	}
	return nil, false
}

// eraStep is one step of eraScript: a request and what its answer must hold.
type eraStep struct {
	name string
	run  func(ctx context.Context, d *eraDriver) error
}

// eraScript is what the stdio era cells run against an everything-server (either release):
// the handshake, tools, resources, prompts, and a tool that elicits and one that samples.
var eraScript = []eraStep{
	{name: "handshake", run: func(ctx context.Context, d *eraDriver) error {
		if d.era == protocolVersionStateless {
			res, err := d.call(ctx, "server/discover", nil)
			if err != nil {
				return err
			}
			var dr struct {
				SupportedVersions []string `json:"supportedVersions"`
			}
			if err := json.Unmarshal(res, &dr); err != nil || !slices.Contains(dr.SupportedVersions, protocolVersionStateless) {
				return fmt.Errorf("server/discover: %s does not offer %s", res, protocolVersionStateless)
			}
			return nil
		}
		res, err := d.call(ctx, "initialize", map[string]any{"protocolVersion": d.era,
			"capabilities": eraCapabilities, "clientInfo": map[string]any{"name": "mcpwrap-e2e-era-driver", "version": "1.0.0"}})
		if err != nil {
			return err
		}
		var ir struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if err := json.Unmarshal(res, &ir); err != nil || ir.ProtocolVersion != d.era {
			return fmt.Errorf("initialize: %s, not %s", res, d.era)
		}
		return d.send(map[string]any{"method": "notifications/initialized"})
	}},
	{name: "tools/list", run: func(ctx context.Context, d *eraDriver) error {
		var err error
		d.tools, err = eraListHas(ctx, d, "tools/list", "tools", "name", "test_simple_text", "test_elicitation", "test_sampling")
		return err
	}},
	{name: "tools/call", run: func(ctx context.Context, d *eraDriver) error {
		return eraToolSays(ctx, d, "test_simple_text", nil, "")
	}},
	{name: "resources/list", run: func(ctx context.Context, d *eraDriver) error {
		_, err := eraListHas(ctx, d, "resources/list", "resources", "uri", "test://static-text")
		return err
	}},
	{name: "resources/read", run: func(ctx context.Context, d *eraDriver) error {
		res, err := d.call(ctx, "resources/read", map[string]any{"uri": "test://static-text"})
		if err != nil {
			return err
		}
		var rr struct {
			Contents []json.RawMessage `json:"contents"`
		}
		if err := json.Unmarshal(res, &rr); err != nil || len(rr.Contents) == 0 {
			return fmt.Errorf("resources/read: no contents in %s", res)
		}
		return nil
	}},
	{name: "prompts/list", run: func(ctx context.Context, d *eraDriver) error {
		_, err := eraListHas(ctx, d, "prompts/list", "prompts", "name", "test_simple_prompt")
		return err
	}},
	{name: "prompts/get", run: func(ctx context.Context, d *eraDriver) error {
		res, err := d.call(ctx, "prompts/get", map[string]any{"name": "test_simple_prompt"})
		if err != nil {
			return err
		}
		var gr struct {
			Messages []json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(res, &gr); err != nil || len(gr.Messages) == 0 {
			return fmt.Errorf("prompts/get: no messages in %s", res)
		}
		return nil
	}},
	// The server's own way to ask: the newer everything-server's tools that return an
	// input-required result to a 2026-07-28 client (and send a request to an older one), else
	// the tools that send a request, which a 2026-07-28 server cannot.
	{name: "elicitation", run: func(ctx context.Context, d *eraDriver) error {
		if slices.Contains(d.tools, "test_input_required_result_elicitation") {
			return eraToolSays(ctx, d, "test_input_required_result_elicitation", nil, eraAnswerText)
		}
		return eraToolSays(ctx, d, "test_elicitation", map[string]any{"message": "Who are you?"}, eraAnswerText)
	}},
	{name: "sampling", run: func(ctx context.Context, d *eraDriver) error {
		if slices.Contains(d.tools, "test_input_required_result_sampling") {
			return eraToolSays(ctx, d, "test_input_required_result_sampling", nil, eraAnswerText)
		}
		return eraToolSays(ctx, d, "test_sampling", map[string]any{"prompt": "Say something."}, eraAnswerText)
	}},
}

// eraListHas requires the list result of method to hold items whose field is each of want, and
// returns every item's field.
func eraListHas(ctx context.Context, d *eraDriver, method, member, field string, want ...string) ([]string, error) {
	res, err := d.call(ctx, method, nil)
	if err != nil {
		return nil, err
	}
	var lr map[string]json.RawMessage
	var items []map[string]any
	if err := json.Unmarshal(res, &lr); err != nil || json.Unmarshal(lr[member], &items) != nil {
		return nil, fmt.Errorf("%s: no %s list in %s", method, member, res)
	}
	var got []string
	for _, item := range items {
		s, _ := item[field].(string)
		got = append(got, s)
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			return got, fmt.Errorf("%s: no %s among %v", method, w, got)
		}
	}
	return got, nil
}

// eraToolSays calls tool and requires a successful answer whose text holds want.
func eraToolSays(ctx context.Context, d *eraDriver, tool string, args map[string]any, want string) error {
	if args == nil {
		args = map[string]any{}
	}
	res, err := d.call(ctx, "tools/call", map[string]any{"name": tool, "arguments": args})
	if err != nil {
		return err
	}
	var cr struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(res, &cr); err != nil || cr.IsError || len(cr.Content) == 0 {
		return fmt.Errorf("tools/call %s: %s", tool, res)
	}
	if !strings.Contains(string(res), want) {
		return fmt.Errorf("tools/call %s: %q not in %s", tool, want, res)
	}
	return nil
}

// runEraScript runs eraScript in era against argv and returns each step's error (nil for a
// pass), by step name. After a step that got no answer the rest are not run, and fail.
func runEraScript(ctx context.Context, t testing.TB, era string, env []string, argv ...string) (map[string]error, *eraDriver) {
	t.Helper()
	d := startEraDriver(ctx, t, era, env, argv...)
	results := map[string]error{}
	var hung error
	for _, step := range eraScript {
		if hung != nil {
			results[step.name] = fmt.Errorf("not run: %w", hung)
			continue
		}
		err := step.run(ctx, d)
		results[step.name] = err
		if errors.Is(err, errEraHung) {
			hung = err
		}
	}
	return results, d
}
