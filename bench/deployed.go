package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"
)

// The deployed scenarios load the real `sitetools serve` binary, a process of its own,
// restarted before each scenario, so that its peak resident set (VmHWM) is that
// scenario's, and its CPU time its own.
const deployedPrefix = "as deployed: "

// deployedRow is one load run against a subprocess, or one side of a comparison.
type deployedRow struct {
	name      string
	process   string
	conns     int
	rps       float64
	p50, p99  time.Duration
	requests  int
	errors    int
	cpuPerReq time.Duration
	rssReady  int64 // VmRSS once ready, before any load
	rssPeak   int64 // VmHWM at the end
	firstErr  error
}

// deployedCase is one deployed scenario: its request, built once the process runs.
type deployedCase struct {
	name  string
	conns int
	want  int
	req   func(p *proc) (request, error)
	check func(body []byte) error // nil: the status is enough
}

func deployedCases(s settings) []deployedCase {
	list := request{method: http.MethodGet, path: "/api/chat/tools", header: http.Header{"Accept": {"application/json"}}}
	searchConns := 8
	if len(s.searchConns) > 0 {
		searchConns = slices.Max(s.searchConns)
	}
	searchArgs, _ := json.Marshal(map[string]any{"name": "search_site", "arguments": map[string]any{"query": searchQuery, "limit": searchLimit}})
	searchCall, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": "search_site", "arguments": map[string]any{"query": searchQuery, "limit": searchLimit}}})
	search := request{method: http.MethodPost, path: "/api/chat/tools", body: searchArgs,
		header: http.Header{"Accept": {"application/json"}, "Content-Type": {"application/json"}}}
	static := func(r request) func(*proc) (request, error) { return func(*proc) (request, error) { return r, nil } }
	return []deployedCase{
		{name: "GET /api/chat/tools (200)", conns: s.conns, want: http.StatusOK, req: static(list)},
		{name: "GET /api/chat/tools, If-None-Match (304)", conns: s.conns, want: http.StatusNotModified, req: func(p *proc) (request, error) {
			resp, _, err := probe(target{label: p.label, addr: p.addr, req: list})
			if err != nil {
				return request{}, err
			}
			r := list
			r.header = http.Header{"Accept": {"application/json"}, "If-None-Match": {resp.Header.Get("ETag")}}
			return r, nil
		}},
		{name: fmt.Sprintf("POST /api/chat/tools search_site, %d conn (cached embedding)", searchConns), conns: searchConns, want: http.StatusOK,
			req: static(search), check: func(b []byte) error { _, err := searchResults(b, false); return err }},
		{name: "POST /mcp tools/list", conns: s.conns, want: http.StatusOK, req: static(mcpRequest([]byte(mcpListBody))),
			check: func(b []byte) error { _, err := mcpListResult(b); return err }},
		{name: fmt.Sprintf("POST /mcp tools/call search_site, %d conn (cached embedding)", searchConns), conns: searchConns, want: http.StatusOK,
			req: static(mcpRequest(searchCall)), check: func(b []byte) error { _, err := searchResults(b, true); return err }},
	}
}

// runDeployed runs one deployed case on a fresh `sitetools serve`: warm-up, then one
// measured round of -duration.
func runDeployed(ctx context.Context, bin *serveBinary, c deployedCase, s settings, progress io.Writer) (deployedRow, error) {
	row := deployedRow{name: c.name, process: "sitetools serve", conns: c.conns}
	p, err := bin.start(ctx, nil)
	if err != nil {
		return row, err
	}
	defer p.stop()
	row.rssReady = p.memory("VmRSS")
	req, err := c.req(p)
	if err != nil {
		return row, err
	}
	t := target{label: "sitetools serve", addr: p.addr, req: req, want: c.want, cpu: p.cpu}
	resp, body, err := probe(t)
	if err != nil {
		return row, err
	}
	if resp.StatusCode != c.want {
		return row, fmt.Errorf("status %d, want %d: %.300s", resp.StatusCode, c.want, body)
	}
	if c.check != nil {
		if err := c.check(body); err != nil {
			return row, err
		}
	}
	if s.warmup > 0 {
		load(ctx, t, c.conns, s.warmup)
	}
	r := load(ctx, t, c.conns, s.duration)
	row.fill(summarize([]round{r}))
	row.rssPeak = p.memory("VmHWM")
	fmt.Fprintf(progress, "%s%s: %8.0f rps, %d errors, peak RSS %s\n", deployedPrefix, c.name, row.rps, row.errors, megabytes(row.rssPeak))
	return row, nil
}

func (row *deployedRow) fill(sd side) {
	row.rps = median(sd.rps)
	row.p50, row.p99 = sd.p50, sd.p99
	row.requests, row.errors, row.firstErr = sd.requests, sd.errors, sd.firstErr
	row.cpuPerReq = sd.cpuPerRequest()
}

// deployedText writes the table of the subprocess runs.
func deployedText(b *strings.Builder, rows []deployedRow, s settings, bin *serveBinary) {
	fmt.Fprintf(b, "As deployed: the `sitetools serve` binary as a process of its own (go build -ldflags '-s -w', %s to build), "+
		"started afresh for each scenario; peak RSS is its VmHWM, CPU its own\n\n", bin.took.Round(100*time.Millisecond))
	t := [][]string{{"scenario", "process", "conns", "rps", "p50 / p99", "errors", "CPU / request", "RSS ready", "peak RSS"}}
	for _, r := range rows {
		t = append(t, []string{r.name, r.process, fmt.Sprint(r.conns), fmt.Sprintf("%.0f", r.rps), duration(r.p50) + " / " + duration(r.p99),
			fmt.Sprint(r.errors), duration(r.cpuPerReq), megabytes(r.rssReady), megabytes(r.rssPeak)})
	}
	table(b, t)
	b.WriteString("\n")
	fmt.Fprintf(b, "- each run: a fresh process (environment: DATABASE_URL of the bench database with the demo site, "+
		"AVAILABILITY_CONFIG=%s as `make demo`, ADMIN_LISTEN_ADDR=off, RATE_LIMIT_PER_MINUTE=0 unless said, LOG_LEVEL=info into a file), "+
		"GET /readyz, RSS ready read, %s warm-up, one %s round, VmHWM read from /proc/PID/status; "+
		"its catalog is serve's own (search_site, get_page, get_free_slots), not the in-process service's seven tools\n",
		slotsSchedule, s.warmup, s.duration)
	b.WriteString("- RSS ready includes the tokenizer's tables (llm.LoadTokenizer at start); the in-process scenarios above share one " +
		"process with the load generator and have no RSS of their own\n")
	b.WriteString("- the rows beside the Node peer are its interleaved rounds (warm-up and rounds as in the table above); the " +
		"rate-limit row counts both clients' requests over the whole scenario, and its latencies are the polite client's\n")
	for _, r := range rows {
		if r.errors > 0 {
			fmt.Fprintf(b, "- %s (%s): %d errors, first: %v\n", r.name, r.process, r.errors, r.firstErr)
		}
	}
}
