package content

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkSitemapMemory measures the heap of reading a sitemap index of gzip files of
// 50 000 entries each (the protocol's most a file), entries in all, kept to maxPages:
// the peak (sampled every 100 µs) and what the result keeps, after a collection. The
// baseline, in the same run, reads the same files as encoding/xml documents whole, as
// sitetools did before it streamed them, keeping every URL: whole/stream is the ratio
// of the peaks.
//
//	go test ./internal/content -run '^$' -bench SitemapMemory -benchtime 3x
func BenchmarkSitemapMemory(b *testing.B) {
	for _, tc := range []struct{ entries, maxPages int }{{100_000, 100_000}, {200_000, 100_000}, {200_000, 10_000}, {400_000, 10_000}} {
		b.Run(fmt.Sprintf("entries=%d/max=%d", tc.entries, tc.maxPages), func(b *testing.B) {
			srv, files := sitemapBenchServer(b, tc.entries)
			c := &Crawler{MaxPages: tc.maxPages}
			var peak, kept uint64
			for b.Loop() {
				var list SitemapList
				p := sitemapBenchPeak(func() {
					var err error
					if list, err = c.ReadSitemap(context.Background(), srv.URL+"/index.xml"); err != nil {
						b.Fatal(err)
					}
				})
				if len(list.Entries) != min(tc.entries, tc.maxPages) {
					b.Fatalf("%d entries", len(list.Entries))
				}
				peak = max(peak, p)
				kept = sitemapBenchKept(&list)
			}
			whole := sitemapBenchPeak(func() { sitemapBenchWhole(b, files) })
			b.ReportMetric(float64(peak)/(1<<20), "peak-MB")
			b.ReportMetric(float64(kept)/(1<<20), "kept-MB")
			b.ReportMetric(float64(whole)/(1<<20), "whole-peak-MB")
			b.ReportMetric(float64(whole)/float64(peak), "whole/stream")
		})
	}
}

// sitemapBenchServer serves /index.xml and its gzip files of 50 000 entries, made
// before the measurements: their bytes are the same for both ways of reading them.
func sitemapBenchServer(b *testing.B, entries int) (*httptest.Server, [][]byte) {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	b.Cleanup(srv.Close)
	var files [][]byte
	var index strings.Builder
	index.WriteString(`<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for f := 0; f*sitemapMaxEntries < entries; f++ {
		var raw bytes.Buffer
		raw.WriteString(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
		for i := f * sitemapMaxEntries; i < min(entries, (f+1)*sitemapMaxEntries); i++ {
			fmt.Fprintf(&raw, "<url><loc>%s/section-%d/a-page-with-a-name-of-some-length-%d</loc><lastmod>%s</lastmod></url>\n",
				srv.URL, i%50, i, sitemapTestDay(i%100_000).Format(time.RFC3339))
		}
		raw.WriteString(`</urlset>`)
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write(raw.Bytes())
		zw.Close()
		body := gz.Bytes()
		files = append(files, body)
		path := fmt.Sprintf("/pages-%d.xml.gz", f)
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) { w.Write(body) })
		fmt.Fprintf(&index, "<sitemap><loc>%s%s</loc></sitemap>", srv.URL, path)
	}
	index.WriteString(`</sitemapindex>`)
	mux.HandleFunc("/index.xml", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, index.String()) })
	return srv, files
}

// sitemapBenchPeak runs f and returns the most heap its objects took meanwhile, above
// what they took before.
func sitemapBenchPeak(f func()) uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(100 * time.Microsecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	})
	f()
	close(stop)
	wg.Wait()
	return peak - min(peak, base)
}

// sitemapBenchKept returns the heap *list holds, after a collection, and lets it go.
func sitemapBenchKept(list *SitemapList) uint64 {
	var with, without runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&with)
	*list = SitemapList{}
	runtime.GC()
	runtime.ReadMemStats(&without)
	return with.HeapAlloc - min(with.HeapAlloc, without.HeapAlloc)
}

// sitemapBenchWhole reads files as the walk did before it streamed: each decoded into
// one document, every URL kept with its lastmod.
func sitemapBenchWhole(b *testing.B, files [][]byte) {
	type loc struct {
		Loc     string `xml:"loc"`
		Lastmod string `xml:"lastmod"`
	}
	var doc struct {
		URLs []loc `xml:"url"`
	}
	urls := map[string]time.Time{}
	for _, f := range files {
		zr, err := gzip.NewReader(bytes.NewReader(f))
		if err != nil {
			b.Fatal(err)
		}
		doc.URLs = nil
		if err := xml.NewDecoder(zr).Decode(&doc); err != nil {
			b.Fatal(err)
		}
		for _, u := range doc.URLs {
			urls[strings.TrimSpace(u.Loc)] = parseLastmod(u.Lastmod)
		}
	}
	runtime.KeepAlive(urls)
}
