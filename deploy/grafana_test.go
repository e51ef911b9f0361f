package deploy_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/sitetools/sitetools/deploy/grafana"
)

// TestGrafanaDashboard: the dashboard is well formed, every panel's query parses with
// Prometheus' parser and selects series sitetools exports, and it shows what an operator
// asks first. test/e2e checks the same names against a live scrape.
func TestGrafanaDashboard(t *testing.T) {
	onDisk, err := os.ReadFile(filepath.Join(root(t), "deploy", "grafana", "sitetools.json"))
	if err != nil || string(onDisk) != string(grafana.Dashboard) {
		t.Fatalf("the embedded dashboard is not deploy/grafana/sitetools.json: %v", err)
	}
	queries, err := grafana.Queries(grafana.Dashboard)
	if err != nil {
		t.Fatal(err)
	}
	series := seriesNames(t)
	used := map[string]bool{}
	for _, q := range queries {
		names, err := grafana.MetricNames(q.Expr)
		if err != nil {
			t.Errorf("panel %q, query %s: %v", q.Panel, q.RefID, err)
			continue
		}
		if len(names) == 0 {
			t.Errorf("panel %q, query %s selects no series", q.Panel, q.RefID)
		}
		// A ratio names a series twice; test/e2e lists each name once.
		var read []string
		for _, n := range sitetoolsNames.FindAllString(q.Expr, -1) {
			if !slices.Contains(read, n) {
				read = append(read, n)
			}
		}
		if !slices.Equal(names, read) {
			t.Errorf("panel %q, query %s: selects %v, but its sitetools_ names read off the text are %v (test/e2e reads them so)",
				q.Panel, q.RefID, names, read)
		}
		for _, n := range names {
			used[n] = true
			if !series[n] {
				t.Errorf("panel %q, query %s selects %q, which sitetools does not export", q.Panel, q.RefID, n)
			}
		}
	}
	for topic, name := range map[string]string{
		"cost today":                 "sitetools_cost_today_usd",
		"cost per day":               "sitetools_provider_cost_usd_total",
		"budget left":                "sitetools_budget_remaining_tokens",
		"paced ceiling":              "sitetools_budget_paced_ceiling_tokens",
		"visitors at their share":    "sitetools_budget_clients_at_share",
		"calls per tool and channel": "sitetools_tool_calls_total",
		"p95 latency":                "sitetools_tool_call_duration_seconds_bucket",
		"429s and 503s":              "sitetools_http_requests_total",
		"degraded searches":          "sitetools_search_degraded_total",
		"degraded chat answers":      "sitetools_chat_answers_total",
		"provider calls and errors":  "sitetools_provider_calls_total",
		"answer ratings and reasons": "sitetools_answer_feedback_total",
		"searches finding nothing":   "sitetools_searches_total",
		"hand-overs":                 "sitetools_handovers_total",
	} {
		if !used[name] {
			t.Errorf("no panel shows %s (%s)", topic, name)
		}
	}
}

// sitetoolsNames is how test/e2e reads the metric names off a query.
var sitetoolsNames = regexp.MustCompile(`\bsitetools_[a-z0-9_]+\b`)
