package app

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"

	"github.com/sitetools/sitetools/internal/config"
	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
	"github.com/sitetools/sitetools/internal/searcheval"
	"github.com/sitetools/sitetools/internal/testkit"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// TestEvaluationLeavesNoTrace asks questions and labels that carry unique markers through
// an evaluation on a provider, which then fails, and finds each marker in the report and
// nowhere else: not in the debug log, not in the evaluation's metrics, not in any row of any
// table; the ledger records the calls on the eval channel all the same.
func TestEvaluationLeavesNoTrace(t *testing.T) {
	ctx := context.Background()
	fake := llmtest.NewServer(t, 64)
	vars := map[string]string{"DATABASE_URL": pgtest.NewURL(t), "EMBEDDINGS_PROVIDER": "openai", "EMBEDDINGS_BASE_URL": fake.BaseURL(),
		"EMBEDDINGS_MODEL": "fake", "EMBEDDINGS_DIMENSIONS": "64", "EMBEDDINGS_TIMEOUT": "1s", "BUDGET_PACING": "off"}
	cfg, err := config.Load(func(k string) string { return vars[k] }, config.AreaDatabase, config.AreaEmbeddings, config.AreaSearch, config.AreaFairUse, config.AreaLog)
	if err != nil {
		t.Fatal(err)
	}
	db, err := postgres.Open(ctx, cfg.DatabaseURL, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	in, err := NewIngester(cfg.Embeddings, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.Sync(ctx, "dir:demo", sitesearch.DirWalk("../../deploy/demo/site", "https://northwind.example")); err != nil {
		t.Fatal(err)
	}

	logs := &testkit.Buffer{}
	e, err := NewEvaluation(ctx, cfg, db, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	fake.RecordTexts()
	search, _, err := e.Searcher(ctx, e.Index())
	if err != nil {
		t.Fatal(err)
	}
	markers := []string{"zebracornflakes", "quixoticmarmalade", "labelmarkerpx", "gingerlyfjord", "labelmarkerqz"}
	qs := []searcheval.Question{
		{Question: "zebracornflakes quixoticmarmalade", Pages: []string{"/pricing"}, Label: "labelmarkerpx", Where: "line 1"},
		{Question: "bicycle parking gingerlyfjord", Pages: []string{"/contact"}, Label: "labelmarkerpx", Where: "line 2"},
		{Question: "Kestrel Freight gingerlyfjord", Pages: []string{"/case-studies/kestrel-freight"}, Label: "labelmarkerqz", Where: "line 3"},
	}
	runs, err := searcheval.Evaluate(ctx, qs[:2], search)
	if err != nil {
		t.Fatal(err)
	}
	fake.SetFail(http.StatusInternalServerError)
	failed, err := searcheval.Evaluate(ctx, qs[2:], search)
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	if failed[0].Degraded == "" || runs[0].Degraded != "" {
		t.Fatalf("degraded: %q before the failure, %q after; want only the one after", runs[0].Degraded, failed[0].Degraded)
	}
	var report bytes.Buffer
	searcheval.Report{File: "q.yaml", Questions: qs, Live: searcheval.Column{Name: "live", Runs: append(runs, failed...)}}.WriteText(&report)

	places := map[string]string{"the log": logs.String(), "the metrics": gatherText(t, e), "the database": dumpTables(t, db)}
	// The questions were asked (the provider got them) and the labels are in the report.
	if sent := strings.Join(fake.Texts(), "\n"); !strings.Contains(sent, "zebracornflakes quixoticmarmalade") || !strings.Contains(sent, "gingerlyfjord") {
		t.Errorf("the provider was not asked the questions: %q", sent)
	}
	for _, m := range []string{"labelmarkerpx", "labelmarkerqz"} {
		if !strings.Contains(report.String(), m) {
			t.Errorf("the report does not show %s", m)
		}
	}
	for place, text := range places {
		for _, m := range markers {
			if n := strings.Count(strings.ToLower(text), m); n != 0 {
				t.Errorf("%s holds %s %d times", place, m, n)
			}
		}
	}
	if !strings.Contains(places["the metrics"], `sitetools_embedding_queries_total{source="provider"} 2`) {
		t.Errorf("the metrics do not count the two provider calls:\n%s", places["the metrics"])
	}
	var calls int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM ledger WHERE channel = 'eval' AND tool = 'search_site'`).Scan(&calls); err != nil {
		t.Fatal(err)
	}
	if calls < 3 {
		t.Errorf("%d ledger rows on the eval channel; want the two calls and the failed one", calls)
	}
}

func gatherText(t *testing.T, e *Evaluation) string {
	t.Helper()
	families, err := e.metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// dumpTables is every row of every table of the database, as text.
func dumpTables(t *testing.T, db *postgres.DB) string {
	t.Helper()
	ctx := context.Background()
	rows, err := db.Pool.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	if len(tables) < 10 {
		t.Fatalf("tables %v", tables)
	}
	var b strings.Builder
	for _, table := range tables {
		var text string
		if err := db.Pool.QueryRow(ctx, `SELECT coalesce(string_agg(x::text, E'\n'), '') FROM `+table+` x`).Scan(&text); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		b.WriteString(text)
	}
	return b.String()
}

// TestEmbedderFor: an index of the built-in local model is searched with the local
// embedder whatever the configured provider; another model's with the configured
// provider, which the local one cannot be.
func TestEmbedderFor(t *testing.T) {
	openai := config.Embeddings{Provider: "openai", BaseURL: "http://127.0.0.1:9/v1", Model: "new", Dimensions: 64}
	for _, tc := range []struct {
		cfg         config.Embeddings
		model, want string
	}{
		{openai, llm.LocalModel, llm.LocalModel},
		{openai, "old", "old"},
		{config.Embeddings{Provider: "local", Dimensions: 384}, llm.LocalModel, llm.LocalModel},
		{config.Embeddings{Provider: "local", Dimensions: 384}, "old", ""},
	} {
		e, err := embedderFor(tc.cfg, tc.model, 96, nil)
		switch {
		case tc.want == "" && (err == nil || !strings.Contains(err.Error(), "EMBEDDINGS_PROVIDER=openai")):
			t.Errorf("%s with %s: %v, want a refusal naming the setting", tc.model, tc.cfg.Provider, err)
		case tc.want != "" && (err != nil || e.Model() != tc.want || e.Dimensions() != 96):
			t.Errorf("%s with %s: %v %v", tc.model, tc.cfg.Provider, e, err)
		}
	}
}
