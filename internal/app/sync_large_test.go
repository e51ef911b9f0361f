package app

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitetools/sitetools/internal/config"
	"github.com/sitetools/sitetools/internal/insights"
	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
)

// largeTestSite is a site of n pages, /p00 to /p(n-1), the later the newer in its sitemap.
func largeTestSite(t *testing.T, n int) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			http.NotFound(w, r)
		case "/sitemap.xml":
			fmt.Fprint(w, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
			for i := range n {
				day := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i)
				fmt.Fprintf(w, "<url><loc>%s/p%02d</loc><lastmod>%s</lastmod></url>", srv.URL, i, day.Format(time.DateOnly))
			}
			fmt.Fprint(w, `</urlset>`)
		default:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, `<!doctype html><html lang="en"><head><title>Page %[1]s</title></head><body><main><h1>Page %[1]s</h1><p>The page %[1]s tells of ordinary things.</p></main></body></html>`, r.URL.Path)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestSyncOverMaxPages: a sync of a sitemap of 80 pages with INGEST_MAX_PAGES=50 indexes
// the 50 newest, removes the 30 older ones an earlier sync (without the limit) had
// indexed, does not fail, and reports the 30 left out: in index_syncs, the metric, the
// owner's report and the log (a count, no URL).
func TestSyncOverMaxPages(t *testing.T) {
	ctx := context.Background()
	site := largeTestSite(t, 80)
	fake := llmtest.NewServer(t, 384)
	db := pgtest.NewDB(t)
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	sync := func(maxPages int) (*prometheus.Registry, postgres.IndexSync) {
		env := map[string]string{"EMBEDDINGS_PROVIDER": "openai", "EMBEDDINGS_BASE_URL": fake.BaseURL(), "EMBEDDINGS_MODEL": "fake-embed",
			"EMBEDDINGS_DIMENSIONS": "384", "FETCH_ALLOW_PRIVATE": "true", "INGEST_SITEMAP_URL": site.URL + "/sitemap.xml",
			"INGEST_MAX_PAGES": fmt.Sprint(maxPages)}
		cfg, err := config.Load(func(k string) string { return env[k] }, config.AreaEmbeddings, config.AreaFetch, config.AreaIngest)
		if err != nil {
			t.Fatal(err)
		}
		reg := prometheus.NewRegistry()
		s := newSyncer(cfg, db, logger, reg)
		id, err := s.jobs.StartInterval(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s.execute(ctx, id, "interval", nil)
		job, err := s.jobs.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return reg, job
	}

	if _, job := sync(80); job.Outcome != "ok" || job.Pages.Added != 80 || job.Pages.LeftOut != 0 {
		t.Fatalf("a sync within the limit: %+v", job)
	}
	logs.Reset()
	reg, job := sync(50)
	if job.Outcome != "ok" || job.Pages.Removed != 30 || job.Pages.Unchanged != 50 || job.Pages.LeftOut != 30 || job.Error != "" {
		t.Errorf("a sync over the limit: %+v; want ok, 30 removed, 50 unchanged, 30 left out", job)
	}
	var want []string
	for i := 30; i < 80; i++ {
		want = append(want, fmt.Sprintf("/p%02d", i))
	}
	if got := largeTestPaths(t, db); !slices.Equal(got, want) {
		t.Errorf("indexed %v; want the 50 newest, /p30 to /p79", got)
	}
	if v := largeTestGauge(t, reg, "sitetools_index_sync_left_out_pages"); v != 30 {
		t.Errorf("sitetools_index_sync_left_out_pages = %v, want 30", v)
	}
	report, err := insights.Read(ctx, db.Pool, 1)
	if err != nil || report.Index.LeftOut != 30 || report.Index.LastFullSync == "" {
		t.Errorf("the owner's report: %+v, %v; want 30 left out", report.Index, err)
	}
	if !strings.Contains(logs.String(), `"left_out":30`) || strings.Contains(logs.String(), "/p0") {
		t.Errorf("the log does not count the pages left out, or names one:\n%s", logs.String())
	}
}

func largeTestPaths(t *testing.T, db *postgres.DB) []string {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), `SELECT path FROM pages ORDER BY path`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func largeTestGauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
