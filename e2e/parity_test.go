//lint:file-ignore SA1019 the client exercises deprecated-but-live features (sampling, logging) because the server under test does.

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// everythingToolArgs holds working arguments for the everything-server tools that take any;
// every other tool is called with {}. TestRelayMatchesDirect checks each tool's input schema
// against this table, so a new required argument fails loudly instead of silently testing an
// error path.
var everythingToolArgs = map[string]map[string]any{
	"test_sampling":            {"prompt": "Say hello to mcpwrap"},
	"test_elicitation":         {"message": "Who is testing?"},
	"json_schema_2020_12_tool": {"name": "e2e", "contactMethod": "email", "email": "e2e@example.invalid"},
	"test_x_mcp_header":        {"region": "eu-west", "level": 3},
}

// TestRelayMatchesDirect runs the same scripted session against the go-sdk conformance
// everything-server twice, directly and through mcpwrap, and requires the same messages back at
// every step: every tool (called with working arguments), prompt, resource, resource template,
// completion and the catalogs, for both handshakes go-sdk v1.8.0 can open with.
//
// Normalisations, all explicit (see normaliseMessages and normaliseHandshake):
//   - asynchronous notifications (list_changed, resources/updated) are compared as the set seen
//     over the session, not per step: the server sends them on its own schedule, so the step
//     they land in is timing, not relay behaviour; resources/updated (a 3 s timer) not at all;
//   - server→client requests within a step are compared without ids and in sorted order: the
//     server sends some concurrently, in Go map order;
//   - the handshake may gain capabilities.tools.listChanged=true: mcpwrap announces it so it can
//     tell the client when tool availability changes. Nothing else in the handshake may differ.
//
// The server has no other nondeterministic field (no timestamps, random ids or durations in its
// results), so everything else is compared exactly as decoded JSON.
func TestRelayMatchesDirect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		protocolVersion string // "" is go-sdk v1.8.0's default: the draft's server/discover
		negotiated      string // the version the session must end up speaking
	}{
		{name: "server-discover", protocolVersion: "", negotiated: protocolVersionStateless},
		{name: "initialize-2025-11-25", protocolVersion: protocolVersionInitialize, negotiated: protocolVersionInitialize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			opts := &mcp.ClientSessionOptions{ProtocolVersion: tt.protocolVersion}

			directClient, directRec, directAsync := newEverythingClient(), &transcript{}, map[string]bool{}
			direct := connect(ctx, t, directClient.Client, opts, directRec, exec.CommandContext(ctx, everythingServerPath))
			directHandshake := normaliseHandshake(t, directRec.Take(), directAsync)
			directSteps := exerciseEverything(ctx, t, directClient, direct, directRec, directAsync)

			wrappedClient, wrappedRec, wrappedAsync := newEverythingClient(), &transcript{}, map[string]bool{}
			wrapped := connectWrapped(ctx, t, wrappedClient.Client, wrapOptions{
				Name: "everything", Config: transparentConfig, Session: opts, Record: wrappedRec,
			}, everythingServerPath)
			wrappedHandshake := normaliseHandshake(t, wrappedRec.Take(), wrappedAsync)
			wrappedSteps := exerciseEverything(ctx, t, wrappedClient, wrapped, wrappedRec, wrappedAsync)

			assert.Equal(t, directHandshake, wrappedHandshake, "handshake")
			require.Equal(t, tt.negotiated, direct.InitializeResult().ProtocolVersion, "direct: negotiated protocol version")
			assert.Equal(t, tt.negotiated, wrapped.InitializeResult().ProtocolVersion, "wrapped: negotiated protocol version")

			delete(directAsync, "notifications/resources/updated") // timer-driven: may or may not fire
			delete(wrappedAsync, "notifications/resources/updated")
			assert.Equal(t, directAsync, wrappedAsync, "asynchronous notifications seen")
			require.Len(t, wrappedSteps, len(directSteps), "steps")
			for i := range directSteps {
				assert.Equal(t, directSteps[i], wrappedSteps[i], "step %d: %s", i, directSteps[i].Name)
			}
		})
	}
}

// step is what the client saw during one scripted operation: the messages it read (normalised
// JSON, in order) and the error the SDK returned, if any.
type step struct {
	Name     string
	Messages []string
	Err      string
}

// exerciseEverything runs the scripted session and returns its steps, adding the asynchronous
// notifications seen along the way to async. It also checks that the script really exercises the server:
// every catalog non-empty, every tool's required arguments supplied.
func exerciseEverything(ctx context.Context, t *testing.T, client *everythingClient, session *mcp.ClientSession, rec *transcript, async map[string]bool) (steps []step) {
	t.Helper()
	do := func(name string, op func() error) {
		var errText string
		if err := op(); err != nil {
			errText = err.Error()
		}
		steps = append(steps, step{Name: name, Messages: normaliseMessages(t, rec.Take(), async), Err: errText})
	}

	do("logging/setLevel", func() error {
		return session.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"})
	})
	do("ping", func() error { return session.Ping(ctx, nil) })

	var tools []*mcp.Tool
	do("tools/list", func() error {
		var err error
		tools, err = listAll(ctx, session.Tools)
		return err
	})
	require.NotEmpty(t, tools, "tools/list")
	for _, tool := range tools {
		args := everythingToolArgs[tool.Name]
		requireArgsCoverSchema(t, tool, args)
		do("tools/call "+tool.Name, func() error {
			params := &mcp.CallToolParams{Name: tool.Name, Arguments: args}
			params.SetProgressToken("progress-" + tool.Name)
			res, err := session.CallTool(ctx, params)
			if err == nil && res.IsError && tool.Name != "test_error_handling" {
				t.Logf("tools/call %s: isError result %v", tool.Name, contentText(res.Content))
			}
			return err
		})
	}
	// test_trigger_{tool,prompt}_change changed the catalogs; the (debounced) notifications must
	// arrive through the relay before the session ends.
	awaitChange(ctx, t, client.toolsChanged, "tools/list_changed")
	awaitChange(ctx, t, client.promptsChanged, "prompts/list_changed")
	do("tools/list after calls", func() error {
		_, err := listAll(ctx, session.Tools)
		return err
	})

	var prompts []*mcp.Prompt
	do("prompts/list", func() error {
		var err error
		prompts, err = listAll(ctx, session.Prompts)
		return err
	})
	require.NotEmpty(t, prompts, "prompts/list")
	for _, prompt := range prompts {
		args := map[string]string{}
		for _, arg := range prompt.Arguments {
			args[arg.Name] = "e2e-" + arg.Name
		}
		if _, ok := args["resourceUri"]; ok {
			args["resourceUri"] = "test://static-text"
		}
		do("prompts/get "+prompt.Name, func() error {
			_, err := session.GetPrompt(ctx, &mcp.GetPromptParams{Name: prompt.Name, Arguments: args})
			return err
		})
		for _, arg := range prompt.Arguments {
			do("completion/complete prompt "+prompt.Name+" "+arg.Name, func() error {
				_, err := session.Complete(ctx, &mcp.CompleteParams{
					Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: prompt.Name},
					Argument: mcp.CompleteParamsArgument{Name: arg.Name, Value: "e2e"},
				})
				return err
			})
		}
	}

	var resources []*mcp.Resource
	do("resources/list", func() error {
		var err error
		resources, err = listAll(ctx, session.Resources)
		return err
	})
	require.NotEmpty(t, resources, "resources/list")
	for _, resource := range resources {
		do("resources/read "+resource.URI, func() error {
			_, err := session.ReadResource(ctx, &mcp.ReadResourceParams{URI: resource.URI})
			return err
		})
	}
	// From 2026-07-28 on, go-sdk turns Subscribe into a background subscriptions/listen stream
	// whose acknowledgement races its cancellation by Unsubscribe: no step-wise comparison there.
	if session.InitializeResult().ProtocolVersion < protocolVersionStateless {
		do("resources/subscribe", func() error {
			return session.Subscribe(ctx, &mcp.SubscribeParams{URI: resources[0].URI})
		})
		do("resources/unsubscribe", func() error {
			return session.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: resources[0].URI})
		})
	}

	var templates []*mcp.ResourceTemplate
	do("resources/templates/list", func() error {
		var err error
		templates, err = listAll(ctx, session.ResourceTemplates)
		return err
	})
	require.NotEmpty(t, templates, "resources/templates/list")
	for _, template := range templates {
		uri, vars := expandTemplate(template.URITemplate)
		do("resources/read "+uri, func() error {
			_, err := session.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
			return err
		})
		for _, v := range vars {
			do("completion/complete resource "+template.URITemplate+" "+v, func() error {
				_, err := session.Complete(ctx, &mcp.CompleteParams{
					Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: template.URITemplate},
					Argument: mcp.CompleteParamsArgument{Name: v, Value: "4"},
				})
				return err
			})
		}
	}
	return steps
}

// everythingClient is a client that can answer every server→client request the
// everything-server makes (sampling, elicitation with any flat form schema, roots) and that
// signals when the server's tool and prompt catalogs change.
type everythingClient struct {
	*mcp.Client
	toolsChanged   chan struct{} // receives (without blocking the SDK) on each tools/list_changed
	promptsChanged chan struct{} // likewise for prompts/list_changed
}

func newEverythingClient() *everythingClient {
	c := &everythingClient{toolsChanged: make(chan struct{}, 1), promptsChanged: make(chan struct{}, 1)}
	signal := func(ch chan struct{}) {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	c.Client = mcp.NewClient(&mcp.Implementation{Name: "mcpwrap-e2e", Version: "1.0.0"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{
				Role:    "assistant",
				Model:   "e2e-model",
				Content: &mcp.TextContent{Text: "Hello from the e2e sampler."},
			}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			content, err := fillForm(req.Params.RequestedSchema)
			if err != nil {
				return nil, err
			}
			return &mcp.ElicitResult{Action: "accept", Content: content}, nil
		},
		// Setting these also makes a draft-protocol client open a subscriptions/listen stream at
		// connect, so server-initiated notifications cross the relay on both protocol paths.
		ToolListChangedHandler:   func(context.Context, *mcp.ToolListChangedRequest) { signal(c.toolsChanged) },
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { signal(c.promptsChanged) },
	})
	c.AddRoots(&mcp.Root{URI: "file:///e2e-root", Name: "e2e root"})
	return c
}

// notificationTimeout bounds the wait for a notification the server has already decided to send
// (the go-sdk server debounces list_changed by 10 ms).
const notificationTimeout = 10 * time.Second

// awaitChange waits for a signal on changed, failing the test after notificationTimeout.
func awaitChange(ctx context.Context, t *testing.T, changed <-chan struct{}, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, notificationTimeout)
	defer cancel()
	select {
	case <-changed:
	case <-ctx.Done():
		require.FailNow(t, "no "+what+" notification", "%v", ctx.Err())
	}
}

// fillForm answers an elicitation form: every property gets its default, else its first enum
// value, else a fixed value of its type.
func fillForm(schema any) (map[string]any, error) {
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	var form struct {
		Properties map[string]struct {
			Type    string `json:"type"`
			Default any    `json:"default"`
			Enum    []any  `json:"enum"`
			OneOf   []struct {
				Const any `json:"const"`
			} `json:"oneOf"`
			Items struct {
				Enum  []any `json:"enum"`
				AnyOf []struct {
					Const any `json:"const"`
				} `json:"anyOf"`
			} `json:"items"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &form); err != nil {
		return nil, fmt.Errorf("elicitation schema: %w", err)
	}
	content := map[string]any{}
	for name, prop := range form.Properties {
		switch {
		case prop.Default != nil:
			content[name] = prop.Default
		case len(prop.Enum) > 0:
			content[name] = prop.Enum[0]
		case len(prop.OneOf) > 0:
			content[name] = prop.OneOf[0].Const
		case prop.Type == "array" && len(prop.Items.Enum) > 0:
			content[name] = prop.Items.Enum[:1]
		case prop.Type == "array" && len(prop.Items.AnyOf) > 0:
			content[name] = []any{prop.Items.AnyOf[0].Const}
		case prop.Type == "boolean":
			content[name] = true
		case prop.Type == "integer", prop.Type == "number":
			content[name] = 7
		default:
			content[name] = "e2e-" + name
		}
	}
	return content, nil
}

// requireArgsCoverSchema fails when tool's input schema requires an argument args lacks.
func requireArgsCoverSchema(t *testing.T, tool *mcp.Tool, args map[string]any) {
	t.Helper()
	raw, err := json.Marshal(tool.InputSchema)
	require.NoError(t, err)
	var schema struct {
		Required []string `json:"required"`
	}
	require.NoError(t, json.Unmarshal(raw, &schema), "tool %s input schema", tool.Name)
	for _, name := range schema.Required {
		require.Contains(t, args, name, "tool %s requires argument %q: add it to everythingToolArgs", tool.Name, name)
	}
}

// expandTemplate fills every {var} of an RFC 6570 level-1 template with "e2e-42" and returns the
// URI and the variable names.
func expandTemplate(template string) (uri string, vars []string) {
	var b strings.Builder
	rest := template
	for {
		open := strings.IndexByte(rest, '{')
		closing := strings.IndexByte(rest, '}')
		if open < 0 || closing < open {
			b.WriteString(rest)
			return b.String(), vars
		}
		b.WriteString(rest[:open])
		b.WriteString("e2e-42")
		vars = append(vars, rest[open+1:closing])
		rest = rest[closing+1:]
	}
}

// listAll collects every page of a paginated list.
func listAll[P any, T any](ctx context.Context, list func(context.Context, *P) iter.Seq2[*T, error]) ([]*T, error) {
	var all []*T
	for item, err := range list(ctx, nil) {
		if err != nil {
			return all, err
		}
		all = append(all, item)
	}
	return all, nil
}

// contentText joins the text blocks of a tool result, for log messages.
func contentText(content []mcp.Content) string {
	var texts []string
	for _, c := range content {
		if text, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, text.Text)
		}
	}
	return strings.Join(texts, " | ")
}

// asyncNotifications are sent on the server's own schedule, not in answer to the step in which
// they happen to arrive: resources/updated on a 3 s timer, list_changed debounced after a catalog
// change, the acknowledgement of the draft's subscriptions/listen stream whenever the server
// gets to it. normaliseMessages moves them out of the steps.
var asyncNotifications = []string{
	"notifications/subscriptions/acknowledged",
	"notifications/resources/updated",
	"notifications/tools/list_changed",
	"notifications/prompts/list_changed",
	"notifications/resources/list_changed",
}

// normaliseMessages re-encodes each message canonically (sorted keys) and
//   - moves asyncNotifications out of the step, reporting via async which ones it saw;
//   - drops the ids of server→client requests and sorts those requests: the everything-server
//     issues the several requests of one multi-round-trip result concurrently (from a Go map
//     iteration), so their order and hence their ids vary from run to run. The client's own
//     responses and everything else keep their order and ids.
func normaliseMessages(t *testing.T, msgs []json.RawMessage, async map[string]bool) []string {
	t.Helper()
	var ordered, serverRequests []string
	for _, raw := range msgs {
		var msg map[string]any
		require.NoError(t, json.Unmarshal(raw, &msg), "message %s", raw)
		method, _ := msg["method"].(string)
		_, hasID := msg["id"]
		switch {
		case slices.Contains(asyncNotifications, method):
			async[method] = true
		case method != "" && hasID:
			delete(msg, "id")
			serverRequests = append(serverRequests, canonicalJSON(t, msg))
		default:
			ordered = append(ordered, canonicalJSON(t, msg))
		}
	}
	slices.Sort(serverRequests)
	return append(serverRequests, ordered...)
}

// normaliseHandshake normalises the handshake messages like normaliseMessages and removes the
// one member mcpwrap may add: result.capabilities.tools.listChanged (an empty tools object it
// leaves behind goes too).
func normaliseHandshake(t *testing.T, msgs []json.RawMessage, async map[string]bool) []string {
	t.Helper()
	var out []string
	for _, line := range normaliseMessages(t, msgs, async) {
		var msg map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &msg))
		if result, ok := msg["result"].(map[string]any); ok {
			if caps, ok := result["capabilities"].(map[string]any); ok {
				if tools, ok := caps["tools"].(map[string]any); ok {
					delete(tools, "listChanged")
					if len(tools) == 0 {
						delete(caps, "tools")
					}
				}
			}
		}
		out = append(out, canonicalJSON(t, msg))
	}
	return out
}

// canonicalJSON encodes v with sorted object keys (encoding/json sorts map keys).
func canonicalJSON(t *testing.T, v any) string {
	t.Helper()
	out, err := json.Marshal(v)
	require.NoError(t, err)
	return string(out)
}
