package app_test

import (
	"context"
	"testing"

	"github.com/sitetools/sitetools/internal/app"
)

// A re-index reads every page again, in full (no conditional request: after an upgrade
// that changed text extraction, pages are parsed anew), and makes every chunk's vector
// again beside the live ones, once per chunk: the pages' unchanged texts cost no second
// embedding.
func TestReindexReadsEveryPageAgain(t *testing.T) {
	paths := []string{"/a", "/b", "/c"}
	e := newIngestEnv(t, paths...)
	first := e.ingest(t, nil)
	e.site.counts()
	in, err := app.NewIngester(e.cfg.Embeddings, e.db, nil)
	if err != nil {
		t.Fatal(err)
	}
	in.Reindex = true
	st, err := app.SitemapIngest{SitemapURL: e.site.srv.URL + "/sitemap.xml", Ingester: in}.Run(context.Background(), e.cfg, e.db, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, bodies := e.site.counts()
	if len(bodies) != len(paths) || st.NotModified != 0 || st.Unchanged != len(paths) {
		t.Errorf("re-index: %+v; bodies served %v; want every page in full, unchanged", st, bodies)
	}
	if !st.Rebuild.Switched || st.Rebuild.Total != first.ChunksEmbedded || st.ChunksEmbedded != first.ChunksEmbedded {
		t.Errorf("re-index embedded %d chunks (rebuild %+v); want the %d of the first ingest, once each", st.ChunksEmbedded, st.Rebuild, first.ChunksEmbedded)
	}
}
