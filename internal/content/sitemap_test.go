package content

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func sitemapTestGzip(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func sitemapTestURLSet(locs ...string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for _, l := range locs {
		fmt.Fprintf(&b, "<url><loc>%s</loc><lastmod>2024-11-14</lastmod></url>", l)
	}
	b.WriteString("</urlset>")
	return b.String()
}

func sitemapTestIndex(locs ...string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for _, l := range locs {
		fmt.Fprintf(&b, "<sitemap><loc>%s</loc></sitemap>", l)
	}
	b.WriteString("</sitemapindex>")
	return b.String()
}

func TestSitemap(t *testing.T) {
	var (
		mu       sync.Mutex
		agents   = map[string]bool{}
		requests = map[string]int{}
	)
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	base := srv.URL // http://127.0.0.1:port
	foreignHost := strings.Replace(base, "127.0.0.1", "localhost", 1)
	foreignScheme := strings.Replace(base, "http://", "https://", 1)

	xmlFile := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/xml")
			fmt.Fprint(w, body)
		}
	}
	files := map[string]http.Handler{
		"/sitemap.xml": xmlFile(sitemapTestURLSet(
			base+"/b", base+"/a", "  "+base+"/a  ", base+"/a#top", base+"/c?page=2",
			foreignHost+"/x", foreignScheme+"/y", "/relative", "",
		)),
		"/posts.xml.gz": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(sitemapTestGzip(t, sitemapTestURLSet(base+"/blog/one", base+"/blog/two")))
		}),
		"/pages": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/x-gzip")
			w.Write(sitemapTestGzip(t, sitemapTestURLSet(base+"/team/", base+"/a")))
		}),
		"/encoded.xml": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/xml")
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(sitemapTestGzip(t, sitemapTestURLSet(base+"/encoded")))
		}),
		"/index.xml": xmlFile(sitemapTestIndex(
			base+"/sitemap.xml", base+"/posts.xml.gz", base+"/pages", base+"/nested.xml", base+"/index.xml", foreignHost+"/foreign.xml",
		)),
		"/nested.xml":    xmlFile(sitemapTestIndex(base + "/encoded.xml")),
		"/deep0.xml":     xmlFile(sitemapTestIndex(base + "/deep1.xml")),
		"/deep1.xml":     xmlFile(sitemapTestIndex(base + "/deep2.xml")),
		"/deep2.xml":     xmlFile(sitemapTestIndex(base + "/sitemap.xml")),
		"/bad-child.xml": xmlFile(sitemapTestIndex(base+"/sitemap.xml", base+"/missing.xml")),
		"/feed.xml":      xmlFile(`<rss version="2.0"><channel><item><link>` + base + `/a</link></item></channel></rss>`),
		"/broken.xml":    xmlFile(`<urlset><url><loc>` + base + `/a</loc></url>`),
		"/empty.xml":     xmlFile(sitemapTestURLSet()),
	}
	for p, h := range files {
		mux.Handle(p, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			agents[r.UserAgent()] = true
			requests[r.URL.Path]++
			mu.Unlock()
			h.ServeHTTP(w, r)
		}))
	}

	for _, tc := range []struct {
		name    string
		crawler Crawler
		path    string
		want    []string
		wantErr string
	}{
		{
			name: "urlset: own scheme and host only, trimmed, without fragments, deduplicated, sorted",
			path: "/sitemap.xml",
			want: []string{base + "/a", base + "/b", base + "/c?page=2", base + "/relative"},
		},
		{
			name: "index with gzip by content and by header, nested index, itself, and a foreign sitemap",
			path: "/index.xml",
			want: []string{base + "/a", base + "/b", base + "/blog/one", base + "/blog/two", base + "/c?page=2", base + "/encoded", base + "/relative", base + "/team/"},
		},
		{name: "empty urlset", path: "/empty.xml", want: []string{}},
		{name: "indexes nested too deep", path: "/deep0.xml", wantErr: "nested deeper"},
		{name: "a child sitemap missing", path: "/bad-child.xml", wantErr: "status 404"},
		{name: "not a sitemap", path: "/feed.xml", wantErr: "neither <urlset> nor <sitemapindex>"},
		{name: "truncated XML", path: "/broken.xml", wantErr: "unexpected EOF"},
		{
			name: "more URLs than MaxPages: the newest, on a tie the first by URL", path: "/sitemap.xml", crawler: Crawler{MaxPages: 3},
			want: []string{base + "/a", base + "/b", base + "/c?page=2"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.crawler.Sitemap(context.Background(), base+tc.path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("URLs (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("each sitemap fetched once, with the User-Agent", func(t *testing.T) {
		mu.Lock()
		defer mu.Unlock()
		if diff := cmp.Diff(map[string]bool{DefaultUserAgent: true}, agents); diff != "" {
			t.Errorf("user agents (-want +got):\n%s", diff)
		}
		if n := requests["/nested.xml"]; n != 1 {
			t.Errorf("nested.xml fetched %d times, want 1", n)
		}
		if n := requests["/index.xml"]; n != 1 {
			t.Errorf("index.xml fetched %d times, want 1 (it lists itself)", n)
		}
	})
}

func TestSitemapRefuses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers
	}))
	t.Cleanup(srv.Close)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		url  string
	}{
		{name: "relative URL", ctx: context.Background(), url: "/sitemap.xml"},
		{name: "not http", ctx: context.Background(), url: "ftp://example.com/sitemap.xml"},
		{name: "cancelled context", ctx: cancelled, url: srv.URL + "/sitemap.xml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := (&Crawler{}).Sitemap(tc.ctx, tc.url)
			if err == nil {
				t.Fatalf("got %v, want an error", got)
			}
		})
	}
}

func TestSitemapEntries(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		base := srv.URL
		fmt.Fprintf(w, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>%[1]s/date</loc><lastmod>2024-11-14</lastmod></url>
<url><loc>%[1]s/minutes</loc><lastmod>2024-11-14T10:30+01:00</lastmod></url>
<url><loc>%[1]s/seconds</loc><lastmod> 2024-11-14T10:30:15Z </lastmod></url>
<url><loc>%[1]s/fraction</loc><lastmod>2024-11-14T10:30:15.25-05:00</lastmod></url>
<url><loc>%[1]s/month</loc><lastmod>2024-11</lastmod></url>
<url><loc>%[1]s/bad</loc><lastmod>last Tuesday</lastmod></url>
<url><loc>%[1]s/none</loc></url>
<url><loc>%[1]s/twice</loc><lastmod>2024-01-01</lastmod></url>
<url><loc>%[1]s/twice</loc><lastmod>2024-06-01</lastmod></url>
<url><loc>%[1]s/twice</loc><lastmod>2024-03-01</lastmod></url>
<url><loc>%[1]s/twice</loc></url>
</urlset>`, base)
	}))
	t.Cleanup(srv.Close)
	list, err := (&Crawler{}).ReadSitemap(context.Background(), srv.URL+"/sitemap.xml")
	if err != nil {
		t.Fatal(err)
	}
	got := list.Entries
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	want := []SitemapEntry{
		{URL: srv.URL + "/bad"},
		{URL: srv.URL + "/date", Lastmod: day(2024, 11, 14)},
		{URL: srv.URL + "/fraction", Lastmod: time.Date(2024, 11, 14, 15, 30, 15, 250e6, time.UTC)},
		{URL: srv.URL + "/minutes", Lastmod: time.Date(2024, 11, 14, 9, 30, 0, 0, time.UTC)},
		{URL: srv.URL + "/month", Lastmod: day(2024, 11, 1)},
		{URL: srv.URL + "/none"},
		{URL: srv.URL + "/seconds", Lastmod: time.Date(2024, 11, 14, 10, 30, 15, 0, time.UTC)},
		{URL: srv.URL + "/twice", Lastmod: day(2024, 6, 1)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}

// TestSitemapBadInput: a loop of indexes is walked once (gzip bombs:
// TestSitemapBombs).
func TestSitemapBadInput(t *testing.T) {
	var (
		mu       sync.Mutex
		requests = map[string]int{}
		base     string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests[r.URL.Path]++
		mu.Unlock()
		switch r.URL.Path {
		case "/a.xml":
			fmt.Fprint(w, sitemapTestIndex(base+"/b.xml", base+"/pages.xml"))
		case "/b.xml":
			fmt.Fprint(w, sitemapTestIndex(base+"/a.xml"))
		case "/pages.xml":
			fmt.Fprint(w, sitemapTestURLSet(base+"/one"))
		}
	}))
	t.Cleanup(srv.Close)
	base = srv.URL
	got, err := (&Crawler{}).Sitemap(context.Background(), base+"/a.xml")
	if err != nil || !slices.Equal(got, []string{base + "/one"}) {
		t.Errorf("a loop of indexes: %v, %v", got, err)
	}
	mu.Lock()
	if requests["/a.xml"] != 1 || requests["/b.xml"] != 1 {
		t.Errorf("a loop of indexes fetched %v", requests)
	}
	mu.Unlock()
}
