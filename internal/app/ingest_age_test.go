package app_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/app"
	"github.com/sitetools/sitetools/internal/app/apptest"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// TestIngestMaxAge: a page whose server keeps answering 304 (/b, /c), or whose sitemap
// <lastmod> does not move (/a), is fetched in full once its copy is older than
// INGEST_MAX_AGE (7 days; each page at its own share of it, from half to all), and then
// not again until it is that old once more; with INGEST_MAX_AGE=0, never. The clock is
// the ingest's, moved on by the test.
func TestIngestMaxAge(t *testing.T) {
	e := newIngestEnv(t, "/a", "/b", "/c")
	e.site.set(func() { e.site.lastmod["/a"] = time.Date(2024, 11, 14, 0, 0, 0, 0, time.UTC) })
	start := time.Now()
	run := func(after time.Duration, maxAge time.Duration) (sitesearch.IngestStats, map[string]int, map[string]int) {
		t.Helper()
		cfg := e.cfg
		cfg.Ingest.MaxAge = maxAge
		now := start.Add(after)
		st, err := app.SitemapIngest{SitemapURL: e.site.srv.URL + "/sitemap.xml", Now: func() time.Time { return now }}.Run(context.Background(), cfg, e.db, apptest.New().Log)
		if err != nil {
			t.Fatalf("ingest at +%s: %v", after, err)
		}
		requests, bodies := e.site.counts()
		delete(requests, "/sitemap.xml")
		delete(requests, "/robots.txt")
		return st, requests, bodies
	}
	week := 7 * 24 * time.Hour
	if st, _, bodies := run(0, week); st.Added != 3 || len(bodies) != 3 {
		t.Fatalf("first ingest: %+v, bodies %v", st, bodies)
	}
	calls := e.fake.Calls()
	for _, after := range []time.Duration{time.Hour, week/2 - time.Hour} {
		st, requests, bodies := run(after, week)
		if st.Skipped != 1 || st.NotModified != 2 || len(bodies) != 0 || !maps.Equal(requests, map[string]int{"/b": 1, "/c": 1}) {
			t.Errorf("at +%s, younger than any page's share of the week: %+v; requests %v, bodies %v", after, st, requests, bodies)
		}
	}
	if st, _, bodies := run(30*24*time.Hour, 0); st.Skipped != 1 || st.NotModified != 2 || len(bodies) != 0 {
		t.Errorf("at +30 days with INGEST_MAX_AGE=0: %+v; bodies %v; want no page fetched in full", st, bodies)
	}
	st, _, bodies := run(week+time.Hour, week)
	if st.Unchanged != 3 || st.Skipped != 0 || st.NotModified != 0 || !maps.Equal(bodies, map[string]int{"/a": 1, "/b": 1, "/c": 1}) {
		t.Errorf("at +1 week: %+v, bodies %v; want every page fetched in full, unchanged", st, bodies)
	}
	if e.fake.Calls() != calls {
		t.Errorf("%d embedding calls for unchanged pages", e.fake.Calls()-calls)
	}
	var fetched time.Time
	if err := e.db.Pool.QueryRow(context.Background(), `SELECT min(fetched_at) FROM pages`).Scan(&fetched); err != nil || fetched.Sub(start.Add(week+time.Hour)).Abs() > time.Millisecond {
		t.Errorf("fetched_at %v, %v; want the time of the full fetch, %v", fetched, err, start.Add(week+time.Hour))
	}
	if st, _, bodies := run(week+2*time.Hour, week); st.Skipped != 1 || st.NotModified != 2 || len(bodies) != 0 {
		t.Errorf("an hour after the full fetch: %+v; bodies %v; want 304s and /a skipped again", st, bodies)
	}
}
