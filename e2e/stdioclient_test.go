package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioClientArg, as the test binary's first argument, makes it a desktop client of the session
// era: `e2e.test mcpwrap-e2e-stdio-client MCPWRAP URL` runs `MCPWRAP --url URL` as its stdio
// server and acts out the conformance client scenario named by MCP_CONFORMANCE_SCENARIO, as the
// go-sdk everything-client does, with a go-sdk client that speaks 2025-11-25 only. It is never
// told which era the scenario's server speaks (the suite's MCP_CONFORMANCE_PROTOCOL_VERSION is
// ignored, as a desktop client would).
const stdioClientArg = "mcpwrap-e2e-stdio-client"

// runStdioClient is stdioClientArg; it returns the exit code.
func runStdioClient(args []string) int {
	if len(args) != 2 {
		fmt.Fprintf(os.Stderr, "usage: %s MCPWRAP URL\n", stdioClientArg)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second) // the suite gives 30
	defer cancel()
	if err := stdioScenario(ctx, args[0], args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "stdio client:", err)
		return 1
	}
	return 0
}

func stdioScenario(ctx context.Context, wrapper, target string) error {
	dir, err := os.MkdirTemp("", "mcpwrap-e2e-stdio-client-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	config := filepath.Join(dir, "config.json")
	if err := os.WriteFile(config, []byte(transparentConfig), 0o600); err != nil {
		return err
	}
	cmd := exec.Command(wrapper, "--name", "scenario", "--config", config, "--state-dir", filepath.Join(dir, "state"),
		"--log-level", "debug", "--url", target)
	cmd.Stderr = os.Stderr

	var conf struct {
		ToolCalls []struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		} `json:"toolCalls"`
	}
	_ = json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &conf)
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")

	opts := &mcp.ClientOptions{}
	switch scenario {
	case "elicitation-sep1034-client-defaults":
		opts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		}
	case "sep-2322-client-request-state":
		opts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirmed": true}}, nil
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1.0.0"}, opts)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: terminateAfter},
		&mcp.ClientSessionOptions{ProtocolVersion: protocolVersionInitialize})
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer cs.Close()

	call := func(name string, args map[string]any) error {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		return err
	}
	// listHas lists the tools and requires name among them.
	listHas := func(name string) (*mcp.ListToolsResult, error) {
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		if !slices.ContainsFunc(tools.Tools, func(t *mcp.Tool) bool { return t.Name == name }) {
			return nil, fmt.Errorf("tool %q not listed", name)
		}
		return tools, nil
	}
	switch scenario {
	case "initialize", "json-schema-ref-no-deref":
		_, err = cs.ListTools(ctx, nil)
		if scenario == "json-schema-ref-no-deref" {
			err = nil
		}
		return err
	case "request-metadata":
		return nil
	case "tools_call":
		if _, err := listHas("add_numbers"); err != nil {
			return err
		}
		return call("add_numbers", map[string]any{"a": 5, "b": 3})
	case "elicitation-sep1034-client-defaults", "sse-retry":
		name := map[string]string{"elicitation-sep1034-client-defaults": "test_client_elicitation_defaults", "sse-retry": "test_reconnection"}[scenario]
		if _, err := listHas(name); err != nil {
			return err
		}
		return call(name, map[string]any{})
	case "json-schema-2020-12-preservation":
		tools, err := listHas("json_schema_2020_12_tool")
		if err != nil {
			return err
		}
		i := slices.IndexFunc(tools.Tools, func(t *mcp.Tool) bool { return t.Name == "json_schema_2020_12_tool" })
		return call("json_schema_echo", map[string]any{"schema": tools.Tools[i].InputSchema})
	case "sep-2322-client-request-state":
		for _, name := range []string{"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"} {
			_ = call(name, map[string]any{}) // some are refused by design
		}
		return nil
	case "http-standard-headers":
		if tools, err := cs.ListTools(ctx, nil); err == nil && len(tools.Tools) > 0 {
			_ = call(tools.Tools[0].Name, map[string]any{})
		}
		if res, err := cs.ListResources(ctx, nil); err == nil && len(res.Resources) > 0 {
			_, _ = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: res.Resources[0].URI})
		}
		if prompts, err := cs.ListPrompts(ctx, nil); err == nil && len(prompts.Prompts) > 0 {
			_, _ = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: prompts.Prompts[0].Name, Arguments: map[string]string{}})
		}
		return nil
	case "http-custom-headers":
		if _, err := cs.ListTools(ctx, nil); err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		for _, c := range conf.ToolCalls {
			_ = call(c.Name, c.Arguments)
		}
		return nil
	case "http-invalid-tool-headers":
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		for _, tool := range tools.Tools {
			_ = call(tool.Name, map[string]any{"region": "us-west1"})
		}
		return nil
	}
	return fmt.Errorf("unknown scenario %q", scenario)
}
