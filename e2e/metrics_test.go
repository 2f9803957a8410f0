package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// freeAddr returns a loopback address no one listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// startPrometheus runs Debian's prometheus in a temp dir, scraping target every second, and
// returns its HTTP API's base URL. It is stopped when the test ends.
func startPrometheus(ctx context.Context, t *testing.T, target string) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		msg := "prometheus is not installed: run `make prometheus` (apt-get install prometheus)"
		if os.Getenv(requireNPMEnv) != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: mcpwrap\n    static_configs:\n      - targets: [%q]\n", target)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600))
	addr := freeAddr(t)
	startProcess(ctx, t, processOptions{}, bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr)
	base := "http://" + addr
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 100*time.Millisecond, "prometheus ready")
	return base
}

// promQuery returns the value of query's one sample, or -1 when it has none.
func promQuery(t *testing.T, base, query string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(query))
	require.NoError(t, err)
	defer resp.Body.Close()
	var body struct {
		Status string
		Data   struct {
			Result []struct {
				Value [2]any
			}
		}
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, "success", body.Status)
	if len(body.Data.Result) == 0 {
		return -1
	}
	require.Len(t, body.Data.Result, 1, query)
	v, err := strconv.ParseFloat(body.Data.Result[0].Value[1].(string), 64)
	require.NoError(t, err)
	return v
}

// TestMetricsScrapedByPrometheus has Debian's prometheus scrape a sidecar's --metrics-listen
// and reads, through its HTTP API, the calls' duration histogram count and the rejections by
// status: each equals what the test did.
func TestMetricsScrapedByPrometheus(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*testTimeout)
	defer cancel()
	metricsAddr := freeAddr(t)
	prom := startPrometheus(ctx, t, metricsAddr)

	config := fmt.Sprintf(`{"defaults": {"approval": "off", "tools": {"overrides": {%q: false}}}}`, fixtureEnvTool)
	client := mcp.NewClient(&mcp.Implementation{Name: "metrics-e2e", Version: "1"}, nil)
	session := connectWrapped(ctx, t, client, wrapOptions{Name: "metered", Config: config,
		Flags: []string{"--metrics-listen", metricsAddr}}, fixtureCommand(t, fixtureBanner)...)
	const allowed, rejected = 8, 4 // every third call is to the locked tool
	for i := range allowed + rejected {
		name, args := fixtureSleepTool, map[string]any{"ms": 1}
		if i%3 == 2 {
			name, args = fixtureEnvTool, map[string]any{}
		}
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		require.NoError(t, err)
		require.Equal(t, name == fixtureEnvTool, res.IsError)
	}

	queries := map[string]float64{
		`sum(mcp_server_operation_duration_seconds_count{job="mcpwrap",mcp_method_name="tools/call"})`:                                      allowed + rejected,
		`sum(mcp_client_operation_duration_seconds_count{job="mcpwrap",mcp_method_name="tools/call"})`:                                      allowed,
		`sum(mcpwrap_tool_rejections_total{job="mcpwrap",mcpwrap_status="disabled_by_config",mcpwrap_server="metered"})`:                    rejected,
		`sum(mcp_server_operation_duration_seconds_count{job="mcpwrap",gen_ai_tool_name="` + fixtureEnvTool + `",error_type="tool_error"})`: rejected,
	}
	// Prometheus finds its target within its discovery's 5 s and scrapes it every second.
	deadline := time.Now().Add(45 * time.Second)
	for q, want := range queries {
		got := promQuery(t, prom, q)
		for got != want && time.Now().Before(deadline) {
			<-time.After(250 * time.Millisecond) // polling an outside process, not synchronising
			got = promQuery(t, prom, q)
		}
		assert.Equal(t, want, got, q)
	}
}
