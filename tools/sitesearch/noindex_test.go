package sitesearch_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// TestIngestNoIndex: a page indexed before is removed by the next ingest once it asks
// not to be indexed (front matter noindex: true, or a robots meta element in an HTML
// page); it is neither stored nor counted as failed, and search no longer finds it.
func TestIngestNoIndex(t *testing.T) {
	e := newSearchEnv(t, envOptions{local: true})
	ctx := context.Background()
	in := &sitesearch.Ingester{Index: postgres.NewSiteIndex(e.db, 384), Embedder: e.embedder}
	dir := t.TempDir()
	copyDir(t, demoSite, dir)
	write := func(name, src string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	walk := sitesearch.DirWalk(dir, baseURL)
	const draft = "# Quarterly zeppelin maintenance\n\nOur zeppelin hangar opens for maintenance every quarter.\n"
	const legacy = `<html><head><title>Legacy zeppelin tours</title>%s</head><body><main><h1>Legacy zeppelin tours</h1><p>Zeppelin tours over the canal, discontinued.</p></main></body></html>`
	write("zeppelin.md", draft)
	write("legacy.html", strings.Replace(legacy, "%s", "", 1))
	if _, err := in.Sync(ctx, "dir:demo", walk); err != nil {
		t.Fatal(err)
	}
	found := func() []string {
		t.Helper()
		r := e.call(t, "search_site", map[string]any{"query": "zeppelin", "limit": 10})
		if r.status != 200 {
			t.Fatalf("search: %d %s", r.status, r.body)
		}
		var urls []string
		for _, h := range r.out.Results {
			if strings.Contains(h.URL, "zeppelin") || strings.Contains(h.URL, "legacy") {
				urls = append(urls, strings.TrimPrefix(h.URL, baseURL))
			}
		}
		return urls
	}
	if got := found(); len(got) != 2 {
		t.Fatalf("before noindex: search finds %v, want /zeppelin and /legacy.html", got)
	}

	write("zeppelin.md", "---\nnoindex: true\n---\n"+draft)
	write("legacy.html", strings.Replace(legacy, "%s", `<meta name="robots" content="NoIndex, follow">`, 1))
	st, err := in.Sync(ctx, "dir:demo", walk)
	if err != nil {
		t.Fatal(err)
	}
	if st.Removed != 2 || st.Failed != 0 || st.Added+st.Updated != 0 {
		t.Fatalf("after noindex: %+v, want 2 removed, none failed, added or updated", st)
	}
	if got := found(); len(got) != 0 {
		t.Fatalf("after noindex: search still finds %v", got)
	}
	var n int
	if err := e.db.Pool.QueryRow(ctx, `SELECT count(*) FROM pages WHERE url LIKE '%zeppelin%' OR url LIKE '%legacy%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d noindex pages still stored", n)
	}
	if r := e.call(t, "get_page", map[string]any{"url": "/zeppelin"}); !strings.Contains(string(r.body), `"isError":true`) {
		t.Fatalf("get_page still serves a noindex page: %s", r.body)
	}
}
