package e2e_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
	"github.com/sitetools/sitetools/internal/testkit"
)

// TestDashboardMetricsAreLive runs the binary through a scripted session (searches past
// the embedding budget, a chat turn, calls past the rate limit) and scrapes its admin
// listener: every metric a Grafana panel names is in the scrape, with the values the
// session must have left.
func TestDashboardMetricsAreLive(t *testing.T) {
	const adminToken = "dashboard-admin-token-0123"
	embeddings := llmtest.NewServer(t, 64)
	chat := llmtest.NewChatServer(t)
	chat.Script(llmtest.Say("We are open Monday to Friday."))
	dir := t.TempDir()
	vars := map[string]string{
		"DATABASE_URL":          pgtest.NewURL(t),
		"LISTEN_ADDR":           "unix:" + filepath.Join(dir, "public.sock"),
		"ADMIN_LISTEN_ADDR":     "unix:" + filepath.Join(dir, "admin.sock"),
		"ADMIN_TOKEN":           adminToken,
		"RATE_LIMIT_PER_MINUTE": "8",
		"EMBEDDINGS_PROVIDER":   "openai",
		"EMBEDDINGS_BASE_URL":   embeddings.BaseURL(),
		"EMBEDDINGS_MODEL":      "fake-embedding",
		"EMBEDDINGS_DIMENSIONS": "64",
		// The day's limit, from one client at any hour: no share, no pacing.
		"EMBEDDINGS_CLIENT_DAILY_SHARE": "0",
		"LLM_CLIENT_DAILY_SHARE":        "0",
		"BUDGET_PACING":                 "off",
		"EMBEDDINGS_DAILY_TOKEN_BUDGET": "60",
		"EMBEDDINGS_PRICE_PER_MTOK":     "20",
		"LLM_BASE_URL":                  chat.BaseURL(),
		"LLM_MODEL":                     "fake-model",
		"LLM_DAILY_TOKEN_BUDGET":        "100000",
		"LLM_PRICE_PER_MTOK":            "5",
	}
	testkit.Run(t, binary, vars, "ingest", "--dir", filepath.Join(repoRoot(), "deploy", "demo", "site"), "--base-url", "https://example.com")
	p := testkit.Start(t, binary, vars, "serve")
	public := testkit.UnixClient(filepath.Join(dir, "public.sock"))
	waitReady(t, p, public)

	degraded, limited := dashboardSession(t, public)

	// The chat's settled spend reaches the day's budget row within a fraction of a second.
	var families map[string]*dto.MetricFamily
	testkit.Eventually(5*time.Second, func() bool {
		families = scrape(t, filepath.Join(dir, "admin.sock"), adminToken)
		for _, m := range families["sitetools_budget_used_tokens"].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetValue() == "llm" && m.GetGauge().GetValue() > 0 {
					return true
				}
			}
		}
		return false
	})
	names := dashboardMetrics(t)
	if len(names) < 10 {
		t.Fatalf("the dashboard names %d metrics: %v", len(names), names)
	}
	for _, n := range names {
		if _, ok := families[n]; !ok {
			t.Errorf("a panel selects %s, which the live scrape lacks", n)
		}
	}

	value := func(name string, labels map[string]string) float64 {
		t.Helper()
		f, ok := families[name]
		if !ok {
			t.Fatalf("no %s in the scrape", name)
		}
	metrics:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue metrics
				}
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			}
		}
		t.Fatalf("no %s%v in the scrape", name, labels)
		return 0
	}
	embedded := float64(6 - degraded)
	for _, c := range []struct {
		name   string
		labels map[string]string
		ok     func(float64) bool
		want   string
	}{
		// The searches embedded, and the chat's own look-up, if its query was not over the budget.
		{"sitetools_provider_calls_total", map[string]string{"kind": "embedding", "outcome": "ok"}, func(v float64) bool { return v == embedded || v == embedded+1 }, fmt.Sprint(embedded, " or ", embedded+1)},
		{"sitetools_provider_calls_total", map[string]string{"kind": "llm", "outcome": "ok"}, func(v float64) bool { return v == 1 }, "1"},
		{"sitetools_search_degraded_total", map[string]string{"reason": "embedding_budget_exhausted"}, func(v float64) bool { return v >= float64(degraded) }, fmt.Sprint("at least ", degraded)},
		{"sitetools_chat_answers_total", map[string]string{"mode": "llm", "reason": "stop"}, func(v float64) bool { return v == 1 }, "1"},
		{"sitetools_budget_limit_tokens", map[string]string{"kind": "embedding"}, func(v float64) bool { return v == 60 }, "60"},
		{"sitetools_budget_remaining_tokens", map[string]string{"kind": "embedding"}, func(v float64) bool { return v >= 0 && v < 60 }, "less than 60"},
		{"sitetools_budget_used_tokens", map[string]string{"kind": "llm"}, func(v float64) bool { return v > 0 }, "more than 0"},
		{"sitetools_cost_today_usd", map[string]string{"kind": "llm"}, func(v float64) bool { return v > 0 }, "more than 0"},
		{"sitetools_provider_cost_usd_total", map[string]string{"kind": "embedding"}, func(v float64) bool { return v > 0 }, "more than 0"},
		{"sitetools_http_requests_total", map[string]string{"status": "429"}, func(v float64) bool { return v == float64(limited) }, fmt.Sprint(limited)},
	} {
		if v := value(c.name, c.labels); !c.ok(v) {
			t.Errorf("%s%v = %v; want %s", c.name, c.labels, v, c.want)
		}
	}
}

// dashboardSession searches past the embedding budget of 60 tokens (a search of five
// tokens holds 48 while in flight, so three fit), has one chat turn answered by the
// model, and calls past the rate limit of 8 a minute; it returns how many searches
// degraded and how many calls were refused.
func dashboardSession(t *testing.T, public *http.Client) (degraded, limited int) {
	t.Helper()
	for i := range 6 {
		reason, err := search(public, fmt.Sprintf("opening hours question %d", i))
		if err != nil {
			t.Fatal(err)
		}
		if reason != "" {
			degraded++
		}
	}
	if degraded == 0 || degraded == 6 {
		t.Fatalf("%d of 6 searches degraded; want some embedded and some over the budget", degraded)
	}
	resp, err := public.Post("http://sitetools/api/chat", "application/json",
		strings.NewReader(`{"consent":true,"messages":[{"role":"user","content":"When are you open?"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	stream, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(stream), `"mode":"llm"`) {
		t.Fatalf("chat: %d %s", resp.StatusCode, stream)
	}
	for range 4 {
		if _, err := search(public, "pricing"); err != nil {
			limited++
		}
	}
	if limited == 0 {
		t.Fatal("no call was rate limited")
	}
	return degraded, limited
}

// dashboardMetrics returns the metric names the Grafana dashboard's queries select. The
// deploy module's test parses each query with Prometheus' parser and checks that every
// name it selects is a sitetools_ name, so that reading them off the text finds them all.
func dashboardMetrics(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(), "deploy", "grafana", "sitetools.json"))
	if err != nil {
		t.Fatal(err)
	}
	var board struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &board); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range board.Panels {
		for _, q := range p.Targets {
			for _, n := range metricName.FindAllString(q.Expr, -1) {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
	}
	return names
}

// metricName is how a sitetools series name stands in a query.
var metricName = regexp.MustCompile(`\bsitetools_[a-z0-9_]+\b`)

// scrape reads the admin listener's /metrics into metric families by series name; a
// histogram's _bucket, _sum and _count are listed under their own names too.
func scrape(t *testing.T, sock, token string) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://sitetools/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := testkit.UnixClient(sock).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: status %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range families {
		if f.GetType() == dto.MetricType_HISTOGRAM {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				families[name+suffix] = f
			}
		}
	}
	return families
}
