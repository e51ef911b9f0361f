package content

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// sitemapTestStream serves a sitemap written as it goes, never whole in memory: the
// entries of urlset(i) for i from 0 to n-1, gzip-compressed when gz.
func sitemapTestStream(gz bool, n int, entry func(w io.Writer, i int)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var out io.Writer = w
		if gz {
			zw := gzip.NewWriter(w)
			defer zw.Close()
			out = zw
		}
		bw := bufio.NewWriter(out)
		defer bw.Flush()
		fmt.Fprint(bw, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">`+"\n")
		for i := range n {
			entry(bw, i)
		}
		fmt.Fprint(bw, "</urlset>\n")
	}
}

// sitemapTestDay is the lastmod of the i-th page of the tests' large sitemaps: a
// different hour for each (i < 100 000), in an order unrelated to i.
func sitemapTestDay(i int) time.Time {
	return time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration((i*7919)%100_000) * time.Hour)
}

// TestSitemapStream: a urlset of 60 000 entries, each with an image, is read as it
// comes; the protocol's 50 000 entries a file are kept and the other 10 000 counted as
// left out.
func TestSitemapStream(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewServer(sitemapTestStream(false, 60_000, func(w io.Writer, i int) {
		fmt.Fprintf(w, "<url>\n  <loc>%s/p/%d</loc>\n  <lastmod>%s</lastmod>\n  <image:image><image:loc>%s/i/%d.jpg</image:loc></image:image>\n</url>\n",
			srv.URL, i, sitemapTestDay(i).Format(time.RFC3339), srv.URL, i)
	}))
	t.Cleanup(srv.Close)
	list, err := (&Crawler{}).ReadSitemap(context.Background(), srv.URL+"/sitemap.xml")
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Entries) != 50_000 || list.LeftOut != 10_000 {
		t.Fatalf("%d entries, %d left out; want 50000 and 10000", len(list.Entries), list.LeftOut)
	}
	want := map[string]time.Time{}
	for i := range 50_000 {
		want[fmt.Sprintf("%s/p/%d", srv.URL, i)] = sitemapTestDay(i)
	}
	for _, e := range list.Entries {
		if lm, ok := want[e.URL]; !ok || !lm.Equal(e.Lastmod) {
			t.Fatalf("entry %+v: not one of the first 50 000 of the file, or not its lastmod", e)
		}
	}
}

// TestSitemapSubset: an index of three gzip files of 5000 pages each, read with
// MaxPages 6000, yields the 6000 newest pages whatever the files' order, and counts the
// other 9000 as left out.
func TestSitemapSubset(t *testing.T) {
	const files, perFile, maxPages = 3, 5000, 6000
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	all := make([]SitemapEntry, 0, files*perFile)
	for f := range files {
		for j := range perFile {
			i := f*perFile + j
			all = append(all, SitemapEntry{URL: fmt.Sprintf("%s/p/%d", srv.URL, i), Lastmod: sitemapTestDay(i)})
		}
		mux.Handle(fmt.Sprintf("/pages-%d.xml.gz", f), sitemapTestStream(true, perFile, func(w io.Writer, j int) {
			e := all[f*perFile+j]
			fmt.Fprintf(w, "<url><loc>%s</loc><lastmod>%s</lastmod></url>\n", e.URL, e.Lastmod.Format(time.RFC3339))
		}))
	}
	mux.HandleFunc("/index.xml", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, sitemapTestIndex(srv.URL+"/pages-0.xml.gz", srv.URL+"/pages-1.xml.gz", srv.URL+"/pages-2.xml.gz"))
	})
	mux.HandleFunc("/reversed.xml", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, sitemapTestIndex(srv.URL+"/pages-2.xml.gz", srv.URL+"/pages-1.xml.gz", srv.URL+"/pages-0.xml.gz"))
	})
	slices.SortFunc(all, func(a, b SitemapEntry) int {
		if newer(a, b) {
			return -1
		}
		return 1
	})
	want := slices.Clone(all[:maxPages])
	slices.SortFunc(want, func(a, b SitemapEntry) int { return strings.Compare(a.URL, b.URL) })
	for _, index := range []string{"/index.xml", "/reversed.xml"} {
		list, err := (&Crawler{MaxPages: maxPages}).ReadSitemap(context.Background(), srv.URL+index)
		if err != nil {
			t.Fatal(err)
		}
		if list.LeftOut != files*perFile-maxPages {
			t.Errorf("%s: %d left out, want %d", index, list.LeftOut, files*perFile-maxPages)
		}
		if diff := cmp.Diff(want, list.Entries); diff != "" {
			t.Errorf("%s: not the %d newest (-want +got):\n%s", index, maxPages, diff)
		}
	}
}

// TestSitemapSubsetTies: past MaxPages, pages on the same <lastmod> and pages without
// one are taken by URL; a URL listed again with a later <lastmod> moves up.
func TestSitemapSubsetTies(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entries := map[string][][2]string{
			"/ties.xml": {{"/z", "2024-05-01"}, {"/d", ""}, {"/c", "2024-01-01"}, {"/b", "2024-01-01"}, {"/a", ""}, {"/y", "2023-01-01"}},
			"/again.xml": {{"/z", "2024-05-01"}, {"/d", ""}, {"/c", "2024-01-01"}, {"/b", "2024-01-01"}, {"/a", ""}, {"/y", "2023-01-01"},
				{"/d", "2025-01-01"}},
		}[r.URL.Path]
		fmt.Fprint(w, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
		for _, e := range entries {
			fmt.Fprintf(w, "<url><loc>%s%s</loc><lastmod>%s</lastmod></url>", srv.URL, e[0], e[1])
		}
		fmt.Fprint(w, `</urlset>`)
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		path    string
		max     int
		want    []string
		leftOut int
	}{
		{path: "/ties.xml", max: 3, want: []string{"/b", "/c", "/z"}, leftOut: 3},
		{path: "/ties.xml", max: 5, want: []string{"/a", "/b", "/c", "/y", "/z"}, leftOut: 1},
		{path: "/again.xml", max: 3, want: []string{"/b", "/d", "/z"}, leftOut: 4}, // /d counted once when first given up, then kept
	} {
		list, err := (&Crawler{MaxPages: tc.max}).ReadSitemap(context.Background(), srv.URL+tc.path)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range list.Entries {
			got = append(got, strings.TrimPrefix(e.URL, srv.URL))
		}
		if !slices.Equal(got, tc.want) || list.LeftOut != tc.leftOut {
			t.Errorf("%s, MaxPages %d: %v, %d left out; want %v, %d", tc.path, tc.max, got, list.LeftOut, tc.want, tc.leftOut)
		}
	}
}

// TestSitemapLastmodClamped: a <lastmod> after the sitemap's fetch is taken as the time
// of the fetch; an earlier one stays as it is.
func TestSitemapLastmodClamped(t *testing.T) {
	fetched := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>%[1]s/future</loc><lastmod>2099-12-31</lastmod></url>
<url><loc>%[1]s/later-today</loc><lastmod>2026-03-01T18:00:00Z</lastmod></url>
<url><loc>%[1]s/past</loc><lastmod>2026-02-28</lastmod></url>
</urlset>`, srv.URL)
	}))
	t.Cleanup(srv.Close)
	list, err := (&Crawler{Now: func() time.Time { return fetched }}).ReadSitemap(context.Background(), srv.URL+"/sitemap.xml")
	if err != nil {
		t.Fatal(err)
	}
	want := []SitemapEntry{
		{URL: srv.URL + "/future", Lastmod: fetched},
		{URL: srv.URL + "/later-today", Lastmod: fetched},
		{URL: srv.URL + "/past", Lastmod: time.Date(2026, 2, 28, 0, 0, 0, 0, time.UTC)},
	}
	if diff := cmp.Diff(want, list.Entries); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}

// sitemapTestBomb is a gzip file that decodes to the opening of a urlset and mb MB of
// blanks: one member of 1 MB of blanks over and over (gzip readers read on through
// concatenated members), each about 1 KB.
func sitemapTestBomb(t *testing.T, mb int) []byte {
	t.Helper()
	member := func(s []byte) []byte {
		var b bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		zw.Write(s)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	out := member([]byte(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>/a</loc></url>`))
	blank := member(bytes.Repeat([]byte(" "), 1<<20))
	for range mb {
		out = append(out, blank...)
	}
	return out
}

// TestSitemapBombs: a file that decodes to far more than the protocol's 50 MB, or holds
// one token past 1 MB, or nests too deep, is refused with its name and the limit, having
// allocated little (encoding/xml would hold the 50 MB of blanks whole); a file of small
// tokens is refused past the file's limit (lowered here).
func TestSitemapBombs(t *testing.T) {
	small := sitemapTestBomb(t, 128)       // 128 MB of blanks
	large := sitemapTestBomb(t, 2048)      // 2 GB of blanks
	longLoc := strings.Repeat("/x", 2<<20) // a <loc> of 4 MB
	defer func(n int64) { sitemapMaxBytes = n }(sitemapMaxBytes)
	sitemapMaxBytes = 2 << 20 // for the file of many comments to be read past it quickly
	comments := strings.Repeat("<!-- a comment of some length, one of very many -->\n", (3<<20)/52)
	nested := strings.Repeat("<x>", 100)
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	mux.HandleFunc("/small.xml.gz", func(w http.ResponseWriter, r *http.Request) { w.Write(small) })
	mux.HandleFunc("/large.xml.gz", func(w http.ResponseWriter, r *http.Request) { w.Write(large) })
	mux.HandleFunc("/long-loc.xml", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<urlset><url><loc>%s%s</loc></url></urlset>`, srv.URL, longLoc)
	})
	mux.HandleFunc("/comments.xml", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<urlset><url><loc>%s/a</loc></url>%s</urlset>`, srv.URL, comments)
	})
	mux.HandleFunc("/nested.xml", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<urlset><url><loc>%s/a</loc>%s`, srv.URL, nested)
	})
	t.Logf("gzip bombs: %d bytes decoding to 128 MB, %d bytes decoding to 2 GB", len(small), len(large))
	for _, tc := range []struct{ path, want string }{
		{"/small.xml.gz", "/small.xml.gz: a run of text, blanks or a comment longer than 1048576 bytes"},
		{"/large.xml.gz", "/large.xml.gz: a run of text, blanks or a comment longer than 1048576 bytes"},
		{"/long-loc.xml", "/long-loc.xml: a run of text, blanks or a comment longer than 1048576 bytes"},
		{"/comments.xml", "/comments.xml: larger than 2097152 bytes uncompressed, the sitemap protocol's limit for one file"},
		{"/nested.xml", "/nested.xml: elements nested deeper than 32 levels"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			began := time.Now()
			_, err := (&Crawler{}).ReadSitemap(context.Background(), srv.URL+tc.path)
			took := time.Since(began)
			runtime.ReadMemStats(&after)
			t.Logf("refused after %s, %.1f MB allocated", took.Round(time.Millisecond), float64(after.TotalAlloc-before.TotalAlloc)/(1<<20))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
				t.Errorf("%d MB allocated reading it, want under 64 MB", grew>>20)
			}
		})
	}
}

// TestSitemapLimits: an entry whose <loc> is over the protocol's 2048 characters is
// ignored; an index of more than 1000 sitemaps is refused before any is fetched.
func TestSitemapLimits(t *testing.T) {
	var fetched atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetched.Add(1)
		switch r.URL.Path {
		case "/long.xml":
			fmt.Fprint(w, sitemapTestURLSet(srv.URL+"/ok", srv.URL+"/"+strings.Repeat("x", 2048), srv.URL+"/also-ok"))
		case "/many.xml":
			locs := make([]string, 1001)
			for i := range locs {
				locs[i] = fmt.Sprintf("%s/s%d.xml", srv.URL, i)
			}
			fmt.Fprint(w, sitemapTestIndex(locs...))
		default:
			fmt.Fprint(w, sitemapTestURLSet(srv.URL+"/"+fmt.Sprint(rand.Int())))
		}
	}))
	t.Cleanup(srv.Close)
	got, err := (&Crawler{}).Sitemap(context.Background(), srv.URL+"/long.xml")
	if err != nil || !slices.Equal(got, []string{srv.URL + "/also-ok", srv.URL + "/ok"}) {
		t.Errorf("a <loc> too long: %v, %v; want it ignored", got, err)
	}
	fetched.Store(0)
	_, err = (&Crawler{}).Sitemap(context.Background(), srv.URL+"/many.xml")
	if err == nil || !strings.Contains(err.Error(), "/many.xml: more than 1000 sitemap files, the limit") || fetched.Load() != 1 {
		t.Errorf("1001 sitemaps: %v after %d requests; want the limit, after one", err, fetched.Load())
	}
}
