package app_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sitetools/sitetools/internal/app"
	"github.com/sitetools/sitetools/internal/app/apptest"
)

// TestIngestSitemapBadInput: a looping sitemap index is read once; a gzip bomb is
// refused with a reason; pages that hang, answer 500 or redirect off the site fail and
// are kept; a PDF is skipped; <loc>s on another host are dropped. No indexed page is
// lost in any of them.
func TestIngestSitemapBadInput(t *testing.T) {
	e := newIngestEnv(t, "/a", "/b", "/c")
	e.ingest(t, nil)
	before := e.stored(t)
	var otherHits atomic.Int32
	other := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { otherHits.Add(1) }))
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	other.Listener.Close()
	other.Listener = l
	other.Start()
	t.Cleanup(other.Close)
	urlset := func(base string, paths ...string) string {
		var b strings.Builder
		b.WriteString("<urlset>")
		for _, p := range paths {
			fmt.Fprintf(&b, "<url><loc>%s%s</loc></url>", base, p)
		}
		return b.String() + "</urlset>"
	}

	// A loop of indexes.
	e.site.set(func() {
		e.site.sitemap = func(base string) string {
			return fmt.Sprintf("<sitemapindex><sitemap><loc>%[1]s/sitemap.xml</loc></sitemap><sitemap><loc>%[1]s/loop.xml</loc></sitemap><sitemap><loc>%[1]s/pages.xml</loc></sitemap></sitemapindex>", base)
		}
		e.site.special["/loop.xml"] = func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "<sitemapindex><sitemap><loc>%s/sitemap.xml</loc></sitemap></sitemapindex>", e.site.srv.URL)
		}
		e.site.special["/pages.xml"] = func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, urlset(e.site.srv.URL, "/a", "/b", "/c")) }
	})
	if st := e.ingest(t, nil); st.Unchanged != 3 || st.Removed != 0 {
		t.Errorf("a looping index: %+v", st)
	}

	// A gzip bomb, refused at sitetools' limit of one token.
	bomb := gzipBomb(64)
	e.site.set(func() {
		e.site.special["/bomb.xml.gz"] = func(w http.ResponseWriter, r *http.Request) { w.Write(bomb) }
	})
	_, err = app.IngestSitemap(context.Background(), e.cfg, e.db, e.site.srv.URL+"/bomb.xml.gz", nil, apptest.New().Log)
	if err == nil || !strings.Contains(err.Error(), "/bomb.xml.gz: a run of text, blanks or a comment longer than 1048576 bytes") {
		t.Errorf("a gzip bomb: %v, want the limit", err)
	}

	// Faults of pages, and URLs on another host.
	e.site.set(func() {
		e.site.sitemap = func(base string) string {
			return strings.Replace(urlset(base, "/a", "/b", "/c", "/file.pdf", "/d"), "</urlset>",
				"<url><loc>"+other.URL+"/x</loc></url></urlset>", 1)
		}
		e.site.pages["/d"] = "A new page."
		e.site.special["/a"] = func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
		e.site.special["/b"] = func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) }
		e.site.special["/c"] = func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, other.URL+"/c", http.StatusFound) }
		e.site.special["/file.pdf"] = func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/pdf")
			fmt.Fprint(w, "%PDF-1.7")
		}
	})
	st := e.ingest(t, nil)
	if st.Failed != 3 || st.Added != 1 || st.Removed != 0 || st.Pages != 1 {
		t.Errorf("faults: %+v, want 3 failed, /d added, none removed", st)
	}
	if n := otherHits.Load(); n != 0 {
		t.Errorf("the other host was asked %d times", n)
	}
	after := e.stored(t)
	delete(after, "/d")
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("indexed pages (-before +after):\n%s", diff)
	}
}

// gzipBomb is a urlset of mb MB of blanks, gzip-compressed: about a thousandth the size.
func gzipBomb(mb int) []byte {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte("<urlset>"))
	for range mb {
		zw.Write(bytes.Repeat([]byte(" "), 1<<20))
	}
	zw.Close()
	return b.Bytes()
}
