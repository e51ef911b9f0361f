package app_test

import (
	"context"
	"fmt"
	"hash/crc32"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/app"
	"github.com/sitetools/sitetools/internal/app/apptest"
	"github.com/sitetools/sitetools/internal/config"
	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// testSite is a site whose pages carry an ETag and a Last-Modified and answer 304 to a
// request that names them; it counts the requests and the bodies of each path.
type testSite struct {
	srv      *httptest.Server
	mu       sync.Mutex
	pages    map[string]string    // path: the text of its paragraph
	lastmod  map[string]time.Time // path: its sitemap <lastmod>, if any
	sitemap  func(base string) string
	special  map[string]http.HandlerFunc
	requests map[string]int
	bodies   map[string]int
}

func newTestSite(t *testing.T, paths ...string) *testSite {
	t.Helper()
	s := &testSite{pages: map[string]string{}, lastmod: map[string]time.Time{}, special: map[string]http.HandlerFunc{},
		requests: map[string]int{}, bodies: map[string]int{}}
	for _, p := range paths {
		s.pages[p] = "The page " + p + " tells of ordinary things."
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *testSite) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests[r.URL.Path]++
	text, ok := s.pages[r.URL.Path]
	special, sitemap := s.special[r.URL.Path], s.sitemap
	s.mu.Unlock()
	switch {
	case r.URL.Path == "/robots.txt":
		http.NotFound(w, r)
	case special != nil:
		special(w, r)
	case r.URL.Path == "/sitemap.xml" && sitemap != nil:
		fmt.Fprint(w, sitemap(s.srv.URL))
	case r.URL.Path == "/sitemap.xml":
		fmt.Fprint(w, s.urlset())
	case !ok:
		http.NotFound(w, r)
	default:
		etag := fmt.Sprintf(`"%08x"`, crc32.ChecksumIEEE([]byte(text)))
		w.Header().Set("ETag", etag)
		w.Header().Set("Last-Modified", "Wed, 13 Nov 2024 10:00:00 GMT")
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		s.mu.Lock()
		s.bodies[r.URL.Path]++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html lang="en"><head><title>Page %s</title></head><body><main><h1>Page %s</h1><p>%s</p></main></body></html>`, r.URL.Path, r.URL.Path, text)
	}
}

// urlset lists the pages, with their lastmod where they have one.
func (s *testSite) urlset() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	b.WriteString(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for p := range s.pages {
		lm := ""
		if t, ok := s.lastmod[p]; ok {
			lm = "<lastmod>" + t.Format(time.RFC3339) + "</lastmod>"
		}
		fmt.Fprintf(&b, "<url><loc>%s%s</loc>%s</url>", s.srv.URL, p, lm)
	}
	b.WriteString("</urlset>")
	return b.String()
}

// counts returns and resets the requests and bodies served.
func (s *testSite) counts() (requests, bodies map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	requests, bodies = s.requests, s.bodies
	s.requests, s.bodies = map[string]int{}, map[string]int{}
	return requests, bodies
}

func (s *testSite) set(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}

type ingestEnv struct {
	cfg  config.Config
	db   *postgres.DB
	fake *llmtest.Server
	site *testSite
}

func newIngestEnv(t *testing.T, paths ...string) *ingestEnv {
	t.Helper()
	fake := llmtest.NewServer(t, 384)
	cfg := apptest.Config(t, map[string]string{"EMBEDDINGS_PROVIDER": "openai", "EMBEDDINGS_BASE_URL": fake.BaseURL(),
		"EMBEDDINGS_MODEL": "fake-embed", "EMBEDDINGS_DIMENSIONS": "384", "FETCH_ALLOW_PRIVATE": "true"})
	cfg.Fetch.Timeout = 500 * time.Millisecond
	return &ingestEnv{cfg: cfg, db: pgtest.NewDB(t), fake: fake, site: newTestSite(t, paths...)}
}

func (e *ingestEnv) ingest(t *testing.T, urls []string) sitesearch.IngestStats {
	t.Helper()
	st, err := app.IngestSitemap(context.Background(), e.cfg, e.db, e.site.srv.URL+"/sitemap.xml", urls, apptest.New().Log)
	if err != nil {
		t.Fatalf("ingest: %v", err)
	}
	return st
}

// stored returns the paragraph of each stored page, by path.
func (e *ingestEnv) stored(t *testing.T) map[string]string {
	t.Helper()
	rows, err := e.db.Pool.Query(context.Background(), `SELECT path, body FROM pages`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var p, body string
		if err := rows.Scan(&p, &body); err != nil {
			t.Fatal(err)
		}
		out[p] = body
	}
	return out
}
