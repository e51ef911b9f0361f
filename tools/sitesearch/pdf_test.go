package sitesearch_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sitetools/sitetools/internal/content"
	"github.com/sitetools/sitetools/internal/fetch"
	"github.com/sitetools/sitetools/internal/pdftext/pdftexttest"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// TestDemoPDFAnswers: the demo's price lists (PDFs, in English and German) answer a
// question no page of the demo answers; search_site, with the demo's defaults, has the
// PDF among the first three, cited at the page that holds the answer.
func TestDemoPDFAnswers(t *testing.T) {
	e := newSearchEnv(t, envOptions{local: true, synonyms: "../../deploy/demo/synonyms.txt"})
	for _, c := range []struct{ query, url string }{
		{"How much is an emergency call-out at the weekend?", "/files/price-list-2026.pdf"},
		{"What does an emergency call-out cost on a Sunday?", "/files/price-list-2026.pdf"},
		{"Was kostet ein Notfalleinsatz am Wochenende?", "/de/dateien/preisliste-2026.pdf"},
		{"Wie teuer ist der Workshopraum in der Bootswerkstatt?", "/de/dateien/preisliste-2026.pdf"},
	} {
		t.Run(c.query, func(t *testing.T) {
			r := e.call(t, "search_site", map[string]any{"query": c.query, "limit": 5})
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			var got []string
			at := -1
			for i, h := range r.out.Results {
				got = append(got, strings.TrimPrefix(h.URL, baseURL)+"#"+h.Anchor)
				if strings.TrimPrefix(h.URL, baseURL) == c.url && at < 0 {
					at = i
				}
			}
			if at < 0 || at > 2 {
				t.Fatalf("%s at %d (0-based), want in the first three: %v", c.url, at, got)
			}
			h := r.out.Results[at]
			want := "page=2"
			if strings.Contains(c.query, "Workshopraum") {
				want = "page=1"
			}
			if h.Anchor != want || !strings.Contains(h.Title, "2026") {
				t.Errorf("hit %+v; want the anchor %s and the PDF's title", h, want)
			}
			t.Logf("%v", got)
		})
	}
}

// TestLinkedPDFs: a sync fetches the PDFs its pages link to although the sitemap does not
// list them; a bad one is reported and the others indexed; a later sync whose page
// answers 304 (no links to read) keeps the PDF while its server serves it, and removes it
// once it answers 404.
func TestLinkedPDFs(t *testing.T) {
	var pdfGone atomic.Bool
	good := pdftexttest.Document("Tide tables", "en", "High water at the canal lock is at 06:12.")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ct, etag := []byte(`<html lang="en"><head><title>Home</title></head><body><main><h1>Home</h1>`+
			`<p>Our tables: <a href="/files/tides.pdf">tides</a>, <a href="/files/locked.pdf">locked</a>.</p></main></body></html>`), "text/html", `"h1"`
		switch r.URL.Path {
		case "/":
		case "/files/tides.pdf":
			body, ct, etag = good, "application/pdf", `"p1"`
			if pdfGone.Load() {
				http.NotFound(w, r)
				return
			}
		case "/files/locked.pdf":
			body, ct, etag = pdftexttest.Encrypted(), "application/pdf", `"p2"`
		default:
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", ct)
		w.Header().Set("ETag", etag)
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	ctx := context.Background()
	db := pgtest.NewDB(t)
	_, embedder := fakeEmbedder(t)
	crawler := &content.Crawler{Client: fetch.New(fetch.Options{AllowPrivate: true}), IgnoreRobots: true}
	in := &sitesearch.Ingester{Index: postgres.NewSiteIndex(db, 384), Embedder: embedder,
		Linked: func(urls []string) sitesearch.Walk { return sitesearch.URLWalk(ctx, crawler, urls) }}
	sync := func() sitesearch.IngestStats {
		st, err := in.Sync(ctx, "sitemap:test", sitesearch.SitemapWalk(ctx, crawler, []content.SitemapEntry{{URL: srv.URL + "/"}}))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	st := sync()
	if st.Added != 2 || len(st.Rejected) != 1 || st.Rejected[0].URL != srv.URL+"/files/locked.pdf" ||
		!strings.Contains(st.String(), "1 documents refused: "+srv.URL+"/files/locked.pdf (encrypted: reading it needs a password)") {
		t.Fatalf("first sync: %s", st)
	}
	if st = sync(); st.NotModified != 2 || st.Removed != 0 {
		t.Fatalf("second sync, the page unchanged: %s", st)
	}
	pdfGone.Store(true)
	if st = sync(); st.Removed != 1 {
		t.Fatalf("third sync, the PDF gone: %s", st)
	}
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pages WHERE url LIKE '%.pdf'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d PDFs stored after it went (%v)", n, err)
	}
}
