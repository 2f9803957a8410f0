//lint:file-ignore SA1019 the fixture exercises sampling and logging, deprecated in the 2026-07-28 draft but still served.

// Package testserver is the MCP server that mcpwrap's demo, tests and
// benchmarks wrap. It is a real go-sdk server over stdio with a few tools,
// a prompt and a resource, plus knobs that make it misbehave the ways real
// servers do: a banner on stdout, a slow start, an early exit, ignoring
// stdin EOF or SIGTERM.
//
// It is reached through the hidden `mcpwrap demo-server` subcommand, so a
// fresh machine needs nothing but the mcpwrap binary to run the demo.
package testserver

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options are the knobs of the server, set by flags in [Main].
type Options struct {
	Name          string        // server name reported in the handshake
	Banner        string        // a non-JSON line printed on stdout before serving
	PIDFile       string        // where to write the process id
	StartDelay    time.Duration // how long to wait before serving
	ExitCode      int           // when non-zero, exit with it before serving
	Stderr        string        // lines printed on stderr at start
	IgnoreEOF     bool          // keep running after stdin closes
	IgnoreSIGTERM bool          // ignore SIGTERM (and SIGINT)
	Description   string        // description of the echo tool, to simulate a changed definition
	Record        string        // append every method received, with its params, to this file
	FlakyFile     string        // counts starts; see FlakyStarts
	FlakyStarts   int           // the first FlakyStarts starts (counted in FlakyFile) fail transiently
	RawTools      string        // serve this file's JSON array verbatim as the catalog (see runRaw)
	Trace         bool          // a span per request, continuing params._meta's trace context, exported as OTEL_* says
}

// Main parses args as flags and runs the server on stdin/stdout until stdin
// closes. It returns the process exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o Options
	fs.StringVar(&o.Name, "name", "demo", "server name")
	fs.StringVar(&o.Banner, "banner", "", "print this non-JSON line on stdout first")
	fs.StringVar(&o.PIDFile, "pid-file", "", "write the process id to this file")
	fs.DurationVar(&o.StartDelay, "start-delay", 0, "wait this long before serving")
	fs.IntVar(&o.ExitCode, "exit-code", 0, "exit with this code before serving")
	fs.StringVar(&o.Stderr, "stderr", "", "print this on stderr at start")
	fs.BoolVar(&o.IgnoreEOF, "ignore-eof", false, "keep running after stdin closes")
	fs.BoolVar(&o.IgnoreSIGTERM, "ignore-sigterm", false, "ignore SIGTERM and SIGINT")
	fs.StringVar(&o.Record, "record", "", "append each method received (and its params) to this file")
	fs.StringVar(&o.FlakyFile, "flaky-file", "", "file counting starts, for --flaky-starts")
	fs.IntVar(&o.FlakyStarts, "flaky-starts", 0, "fail the first N starts with a transient error (needs --flaky-file)")
	fs.StringVar(&o.RawTools, "raw-tools", "", "serve this file's JSON array of tools verbatim, from a minimal line server instead of the SDK")
	fs.BoolVar(&o.Trace, "trace", false, "export a span per request over OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT), continuing the trace context in params._meta")
	fs.StringVar(&o.Description, "echo-description", "Echoes its text argument back.", "description of the echo tool")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := Run(context.Background(), o, stdin, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "demo-server:", err)
		return 1
	}
	return 0
}

// Run serves MCP on stdin/stdout with the given options.
func Run(ctx context.Context, o Options, stdin io.Reader, stdout, stderr io.Writer) error {
	if o.IgnoreSIGTERM {
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
	}
	if o.PIDFile != "" {
		if err := os.WriteFile(o.PIDFile, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			return err
		}
	}
	if o.Stderr != "" {
		fmt.Fprintln(stderr, o.Stderr)
	}
	if o.ExitCode != 0 {
		os.Exit(o.ExitCode)
	}
	if o.FlakyFile != "" && countStart(o.FlakyFile) <= o.FlakyStarts {
		// What a server whose backend is briefly unreachable prints.
		fmt.Fprintln(stderr, "error: backend: read tcp 127.0.0.1:5432: connection reset by peer")
		os.Exit(1)
	}
	if o.StartDelay > 0 {
		time.Sleep(o.StartDelay) // simulates a slow server; not synchronisation
	}
	if o.Banner != "" {
		fmt.Fprintln(stdout, o.Banner)
	}
	if o.RawTools != "" {
		return runRaw(o, stdin, stdout)
	}
	s := New(o)
	if o.Trace {
		mw, stop, err := tracing(ctx, o.Name)
		if err != nil {
			return err
		}
		defer stop(context.WithoutCancel(ctx))
		s.AddReceivingMiddleware(mw)
	}
	err := s.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}})
	if o.IgnoreEOF {
		select {} // like servers that never notice their client left
	}
	if errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) {
		return nil
	}
	return err
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// EchoInput is the input of the echo tool.
type EchoInput struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

// BlobInput is the input of the blob tool.
type BlobInput struct {
	Bytes int `json:"bytes" jsonschema:"how many bytes of text to return"`
}

// FloodInput is the input of the flood tool.
type FloodInput struct {
	Count int `json:"count" jsonschema:"how many log notifications to send"`
	Bytes int `json:"bytes" jsonschema:"size of each notification's data"`
}

// WaitInput is the input of the wait tool.
type WaitInput struct {
	Milliseconds int `json:"ms" jsonschema:"how long to wait; 0 waits until cancelled"`
	// ProgressMilliseconds, with a progress token, reports progress at this
	// interval while waiting (a long job that is not stuck).
	ProgressMilliseconds int `json:"progress_ms,omitempty" jsonschema:"report progress at this interval, in ms, when the call has a progress token"`
}

// New returns the server with its tools, prompt and resource.
func New(o Options) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: o.Name, Version: "1.0.0"}, &mcp.ServerOptions{
		Instructions:       "A demo server for mcpwrap.",
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	if o.Record != "" {
		s.AddReceivingMiddleware(recorder(o.Record))
	}
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Makes the server crash (exit 1) after answering nothing."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			os.Exit(1)
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "wait", Description: "Waits, then answers (keeps a request in flight)."},
		func(ctx context.Context, req *mcp.CallToolRequest, in WaitInput) (*mcp.CallToolResult, any, error) {
			var timer <-chan time.Time
			if in.Milliseconds > 0 {
				timer = time.After(time.Duration(in.Milliseconds) * time.Millisecond)
			}
			progress, stop := progressTicks(req, in.ProgressMilliseconds)
			defer stop()
			for n := 1; ; n++ {
				select {
				case <-timer:
					return text("waited"), nil, nil
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				case <-progress:
					if err := notifyProgress(ctx, req, n); err != nil {
						return nil, nil, err
					}
				}
			}
		})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: o.Description,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in EchoInput) (*mcp.CallToolResult, any, error) {
			return text(in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "blob", Description: "Returns a text result of the given size.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in BlobInput) (*mcp.CallToolResult, any, error) {
			return text(strings.Repeat("x", in.Bytes)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "flood", Description: "Sends many log notifications, then answers."},
		func(ctx context.Context, req *mcp.CallToolRequest, in FloodInput) (*mcp.CallToolResult, any, error) {
			data := strings.Repeat("y", in.Bytes)
			for i := range in.Count {
				if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: data}); err != nil {
					return nil, nil, fmt.Errorf("after %d notifications: %w", i, err)
				}
			}
			return text(fmt.Sprintf("sent %d notifications", in.Count)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "ask_llm", Description: "Asks the client's model a question (sampling)."},
		func(ctx context.Context, req *mcp.CallToolRequest, in EchoInput) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
				MaxTokens: 100,
				Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Text}}},
			})
			if err != nil {
				return nil, nil, err
			}
			answer := ""
			if t, ok := res.Content.(*mcp.TextContent); ok {
				answer = t.Text
			}
			return text(fmt.Sprintf("the model (%s) said: %s", res.Model, answer)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "write_note", Description: "Stores a note (a tool that changes state)."},
		func(ctx context.Context, req *mcp.CallToolRequest, in EchoInput) (*mcp.CallToolResult, any, error) {
			return text("stored: " + in.Text), nil, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Description: "A greeting.",
		Arguments: []*mcp.PromptArgument{{Name: "who", Required: true}}},
		func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user",
				Content: &mcp.TextContent{Text: "Hello, " + req.Params.Arguments["who"]}}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "demo://readme", Name: "readme", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "mcpwrap demo"}}}, nil
		})
	return s
}

// progressTicks returns a channel ticking every ms milliseconds when the
// call asked for progress (it has a progress token and ms > 0), else a nil
// channel, and a func that stops it.
func progressTicks(req *mcp.CallToolRequest, ms int) (<-chan time.Time, func()) {
	if ms <= 0 || req.Params.GetProgressToken() == nil {
		return nil, func() {}
	}
	t := time.NewTicker(time.Duration(ms) * time.Millisecond)
	return t.C, t.Stop
}

// notifyProgress sends the caller progress notification n of req.
func notifyProgress(ctx context.Context, req *mcp.CallToolRequest, n int) error {
	return req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
		ProgressToken: req.Params.GetProgressToken(), Progress: float64(n), Message: fmt.Sprintf("tick %d", n)})
}

// countStart increments the start counter in path and returns it.
func countStart(path string) int {
	data, _ := os.ReadFile(path)
	n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	n++
	_ = os.WriteFile(path, []byte(strconv.Itoa(n)), 0o644)
	return n
}

// recorder appends "method params" lines to path for every message the
// server receives, so tests can see what reached it.
func recorder(path string) mcp.Middleware {
	var mu sync.Mutex
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			params, _ := json.Marshal(req.GetParams())
			mu.Lock()
			if f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
				fmt.Fprintf(f, "%s %s\n", method, params)
				f.Close()
			}
			mu.Unlock()
			return next(ctx, method, req)
		}
	}
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
