package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// httpClient is the tests' client: keep-alive to nginx, and no request waits forever.
var httpClient = &http.Client{Timeout: 20 * time.Second}

// searchVia calls search_site with query at base (nginx or a replica) and returns its
// degraded field ("" for a full answer); any other answer than 200 with a result that
// is not an error is an error.
func searchVia(base, query string) (degraded string, err error) {
	return searchWith(httpClient, base, query)
}

// searchWith is searchVia sent with client.
func searchWith(client *http.Client, base, query string) (degraded string, err error) {
	body, _ := json.Marshal(map[string]any{"name": "search_site", "arguments": map[string]any{"query": query}})
	resp, err := client.Post(base+"/api/chat/tools", "application/json", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("search %q: status %d, body cut short: %w", query, resp.StatusCode, err)
	}
	var res struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			Results  []json.RawMessage `json:"results"`
			Degraded string            `json:"degraded"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(b, &res); err != nil || resp.StatusCode != http.StatusOK || res.IsError {
		return "", fmt.Errorf("search %q: status %d, isError %v, %v: %.300s", query, resp.StatusCode, res.IsError, err, b)
	}
	return res.StructuredContent.Degraded, nil
}

// get sends GET base+path and fails unless the answer is a 2xx, read to its end.
func get(base, path string) error {
	resp, err := httpClient.Get(base + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("GET %s: status %d, body cut short: %w", path, resp.StatusCode, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("GET %s: status %d: %.300s", path, resp.StatusCode, b)
	}
	return nil
}

// mcpToolsList sends MCP's tools/list to base's /mcp (a POST, as every MCP request is)
// and fails unless the answer is a 200 that lists search_site.
func mcpToolsList(base string) error {
	status, b, err := mcpPost(base, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	if status != http.StatusOK || !bytes.Contains(b, []byte(`"search_site"`)) {
		return fmt.Errorf("tools/list: status %d: %.300s", status, b)
	}
	return nil
}

// mcpPost sends one JSON-RPC message to base's /mcp and returns the answer read whole.
func mcpPost(base, body string) (int, []byte, error) {
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, b, fmt.Errorf("status %d, body cut short: %w", resp.StatusCode, err)
	}
	return resp.StatusCode, b, nil
}

// budgetRow returns the budget of kind ("embedding" or "llm") as the books have it:
// used and reserved tokens, summed over the days of the test (0 without a row).
func budgetRow(t *testing.T, conn *pgx.Conn, kind string) (used, reserved int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := conn.QueryRow(ctx, `SELECT coalesce(sum(used), 0)::bigint, coalesce(sum(reserved), 0)::bigint
		FROM budgets WHERE kind = $1`, kind).Scan(&used, &reserved)
	if err != nil {
		t.Fatalf("budget %s: %v", kind, err)
	}
	return used, reserved
}

// metric scrapes the /metrics of a replica's admin listener (cluster.Admin) and returns
// the sum of the samples of name whose labels include labels: a counter's, gauge's or
// untyped value, or for name_count and name_sum a histogram's count and sum. A series
// that does not exist yet is 0.
func metric(t *testing.T, adminURL, name string, labels map[string]string) float64 {
	t.Helper()
	families := scrape(t, adminURL)
	family, part := families[name], ""
	if family == nil {
		for _, suffix := range []string{"_count", "_sum"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && families[base].GetType() == dto.MetricType_HISTOGRAM {
				family, part = families[base], suffix
			}
		}
	}
	sum := 0.0
	for _, m := range family.GetMetric() {
		if !hasLabels(m, labels) {
			continue
		}
		switch {
		case part == "_count":
			sum += float64(m.GetHistogram().GetSampleCount())
		case part == "_sum":
			sum += m.GetHistogram().GetSampleSum()
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}

// scrape reads the metric families of the admin listener at adminURL.
func scrape(t *testing.T, adminURL string) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, adminURL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("scrape %s: %v", adminURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: status %d", adminURL, resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("scrape %s: %v", adminURL, err)
	}
	return families
}

// waitFor polls cond every 20 ms until it holds, failing the test with what after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		<-tick.C
	}
}

// searchOutcome is how one search of searchMany went.
type searchOutcome struct {
	query, degraded string
	err             error
	took            time.Duration
}

// searchMany sends the searches of queries, the i-th to base(i), from width clients at
// once, and returns how each went, in the order of queries.
func searchMany(base func(i int) string, queries []string, width int) []searchOutcome {
	out := make([]searchOutcome, len(queries))
	next := make(chan int)
	var wg sync.WaitGroup
	for range width {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				began := time.Now()
				degraded, err := searchVia(base(i), queries[i])
				out[i] = searchOutcome{query: queries[i], degraded: degraded, err: err, took: time.Since(began)}
			}
		}()
	}
	for i := range queries {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

// distinctQueries returns n queries that differ from each other, of a few words each.
func distinctQueries(what string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s %s question %d", topics[i%len(topics)], what, i)
	}
	return out
}

// answered fails the test for every search of out that was not answered (a status
// other than 200, or a result that is an error), and returns how many were answered by
// degraded reason ("" for those with their vector) and the longest a search took.
func answered(t *testing.T, out []searchOutcome) (byReason map[string]int, longest time.Duration) {
	t.Helper()
	byReason = map[string]int{}
	failed := 0
	for _, o := range out {
		longest = max(longest, o.took)
		if o.err != nil {
			if failed++; failed <= 5 {
				t.Errorf("search %q after %v: %v", o.query, o.took.Round(time.Millisecond), o.err)
			}
			continue
		}
		byReason[o.degraded]++
	}
	if failed > 0 {
		t.Errorf("%d of %d searches were not answered", failed, len(out))
	}
	return byReason, longest
}

// atOnce sends request i to replica i%N, all n at once, and returns their statuses
// ("204", or what came instead).
func atOnce(c *cluster, n int, send func(base string, i int) string) []string {
	statuses := make([]string, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			statuses[i] = send(c.Replica(i%len(c.replicas)), i)
		})
	}
	close(start)
	wg.Wait()
	return statuses
}

// postJSON posts body as JSON to url with the extra headers and returns "204", or the
// status and body that came instead, or the error.
func postJSON(url string, body any, header map[string]string) string {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Sprintf("%d %s", resp.StatusCode, msg)
	}
	return "204"
}

// column is the one text column of query's rows on the cluster's database.
func column(t *testing.T, c *cluster, query string) []string {
	t.Helper()
	rows, err := c.DB(t).Query(context.Background(), query)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return got
}
