package cluster_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// bigSite is a local site of n tiny pages behind one urlset: the first half listed with
// a <lastmod>, the others without, every page with an ETag and a 304 to If-None-Match.
// It counts the page bodies and the 304s it sends. bomb, when set, is what it serves
// at /sitemap.xml.gz instead, with the header Content-Encoding: gzip when encoded.
type bigSite struct {
	*httptest.Server
	n              int
	bodies, notMod atomic.Int64
	bomb           atomic.Pointer[[]byte]
	encoded        atomic.Bool
	modified       time.Time
	modifiedHeader string
}

func newBigSite(t *testing.T, n int) *bigSite {
	s := &bigSite{n: n, modified: time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)}
	s.modifiedHeader = s.modified.Format(http.TimeFormat)
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *bigSite) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/sitemap.xml.gz" {
		w.Header().Set("Content-Type", "application/gzip")
		if b := s.bomb.Load(); b != nil {
			if s.encoded.Load() {
				w.Header().Set("Content-Encoding", "gzip")
			}
			w.Write(*b)
			return
		}
		s.urlset(w)
		return
	}
	i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/p/"))
	if err != nil || i < 0 || i >= s.n {
		http.NotFound(w, r)
		return
	}
	etag := fmt.Sprintf(`"p%d"`, i)
	w.Header().Set("ETag", etag)
	w.Header().Set("Last-Modified", s.modifiedHeader)
	if r.Header.Get("If-None-Match") == etag {
		s.notMod.Add(1)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	s.bodies.Add(1)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<!doctype html><html lang=en><head><title>Page %d</title></head><body><main><h1>Page %d</h1>"+
		"<p>Page %d of the site is about %s.</p></main></body></html>", i, i, i, bigSiteWord(i))
}

// urlset writes the sitemap, gzip-compressed.
func (s *bigSite) urlset(w http.ResponseWriter) {
	zw := gzip.NewWriter(w)
	defer zw.Close()
	fmt.Fprint(zw, `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for i := range s.n {
		if i < s.n/2 {
			fmt.Fprintf(zw, "<url><loc>%s/p/%d</loc><lastmod>%s</lastmod></url>\n", s.URL, i, s.modified.Format(time.RFC3339))
		} else {
			fmt.Fprintf(zw, "<url><loc>%s/p/%d</loc></url>\n", s.URL, i)
		}
	}
	fmt.Fprint(zw, "</urlset>")
}

// bigSiteWord is a word only page i has: letters for its digits.
func bigSiteWord(i int) string {
	var b strings.Builder
	b.WriteString("quoll")
	for _, d := range strconv.Itoa(i) {
		b.WriteByte(byte('a' + d - '0'))
	}
	return b.String()
}

// syncJob is a sync job as GET /admin/reindex/{id} shows it.
type syncJob struct {
	ID    string `json:"id"`
	State string `json:"state"`
	Pages struct {
		Added, Updated, Unchanged, NotModified, Skipped, Removed, Failed int
	} `json:"pages"`
	Error string `json:"error"`
}

// syncSite asks replica 0 for a whole-site sync and waits up to d for its job to end.
func syncSite(t *testing.T, c *cluster, d time.Duration) syncJob {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.Admin(0)+"/admin/reindex", strings.NewReader(`{"all": true}`))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	var j syncJob
	if code := doJSON(t, req, &j); code != http.StatusAccepted {
		t.Fatalf("POST /admin/reindex: %d %+v", code, j)
	}
	waitFor(t, d, "the sync job did not end", func() bool {
		req, _ := http.NewRequest(http.MethodGet, c.Admin(0)+"/admin/reindex/"+j.ID, nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		doJSON(t, req, &j)
		return j.State == "done" || j.State == "failed"
	})
	return j
}

func doJSON(t *testing.T, req *http.Request, out any) int {
	t.Helper()
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("%s %s: %d: %v", req.Method, req.URL.Path, resp.StatusCode, err)
	}
	return resp.StatusCode
}

// TestSyncPastTheOldLimit: serve syncs a sitemap of 6 000 pages, more than the 5 000 a
// sync once took, completely; a second sync of the unchanged site fetches no page body
// and embeds nothing: the pages listed with a <lastmod> are not asked for, the others
// answer 304.
func TestSyncPastTheOldLimit(t *testing.T) {
	const n = 6000
	s := newBigSite(t, n)
	c := startCluster(t, 1, map[string]string{"INGEST_SITEMAP_URL": s.URL + "/sitemap.xml.gz", "INGEST_INTERVAL": "0", "FETCH_ALLOW_PRIVATE": "true"})
	began := time.Now()
	j := syncSite(t, c, 2*time.Minute)
	t.Logf("first sync of %d pages: %v", n, time.Since(began).Round(time.Millisecond))
	if j.State != "done" || j.Pages.Added != n || j.Pages.Failed != 0 {
		t.Fatalf("first sync: %+v; want done with %d pages added", j, n)
	}
	var stored int
	if err := c.DB(t).QueryRow(context.Background(), `SELECT count(*) FROM pages WHERE source = $1`, "sitemap:"+s.URL+"/sitemap.xml.gz").Scan(&stored); err != nil || stored != n {
		t.Fatalf("%d pages of the sitemap in the index (%v); want %d", stored, err, n)
	}
	if last := fmt.Sprintf("%s/p/%d", s.URL, n-1); !found(t, c.URL(), bigSiteWord(n-1), last) {
		t.Errorf("the last page (%s) is not found by its word", last)
	}

	bodies, notMod, calls := s.bodies.Load(), s.notMod.Load(), c.Provider().Calls()
	began = time.Now()
	j = syncSite(t, c, time.Minute)
	t.Logf("unchanged sync: %v, %d bodies, %d 304s", time.Since(began).Round(time.Millisecond), s.bodies.Load()-bodies, s.notMod.Load()-notMod)
	if j.State != "done" || j.Pages.Unchanged != n || j.Pages.Skipped != n/2 || j.Pages.NotModified != n/2 || j.Pages.Removed != 0 {
		t.Errorf("unchanged sync: %+v; want done, all %d unchanged: %d not fetched (lastmod), %d not modified", j, n, n/2, n/2)
	}
	if got := s.bodies.Load() - bodies; got != 0 {
		t.Errorf("the unchanged sync fetched %d page bodies; want none", got)
	}
	if got := s.notMod.Load() - notMod; got != n/2 {
		t.Errorf("the unchanged sync got %d 304s; want %d, one for each page without <lastmod>", got, n/2)
	}
	if got := c.Provider().Calls() - calls; got != 0 {
		t.Errorf("the unchanged sync made %d embedding calls; want none", got)
	}
}

// TestSyncRefusesGzipBomb: a sitemap.xml.gz that decodes to far more than the protocol's
// 50 MB a file, sent as a file (128 MB from about 150 KB: deflate's ratio is at most
// about 1032:1) and sent again with Content-Encoding: gzip (8 GB from a few KB), is
// refused: the job fails naming the file and the limit, the log says so, the index is
// kept, and serve's resident set peaks less than 100 MB above what it was before.
func TestSyncRefusesGzipBomb(t *testing.T) {
	s := newBigSite(t, 10)
	c := startCluster(t, 1, map[string]string{"INGEST_SITEMAP_URL": s.URL + "/sitemap.xml.gz", "INGEST_INTERVAL": "0", "FETCH_ALLOW_PRIVATE": "true"})
	if j := syncSite(t, c, time.Minute); j.State != "done" || j.Pages.Added != 10 {
		t.Fatalf("sync of the site before the bomb: %+v", j)
	}
	db := c.DB(t)
	var before int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM pages`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	const want = "/sitemap.xml.gz: larger than 52428800 bytes uncompressed, the sitemap protocol's limit for one file"
	pid := c.Pid(0)
	for _, tc := range []struct {
		name    string
		mb      int
		encoded bool
	}{
		{"128 MB as a file", 128, false},
		{"8 GB with Content-Encoding: gzip", 8192, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bomb := gzipBomb(t, tc.mb)
			if tc.encoded {
				bomb = gzipOnce(t, bomb)
			}
			s.bomb.Store(&bomb)
			s.encoded.Store(tc.encoded)
			failures := strings.Count(c.replicas[0].proc.Out.String(), "index sync failed")
			idle := procStatus(t, pid, "VmRSS")
			// The peak from here: without clear_refs VmHWM holds start-up's too, a stricter bound.
			_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
			j := syncSite(t, c, time.Minute)
			peak := procStatus(t, pid, "VmHWM")
			t.Logf("%d bytes on the wire: %s; resident set %.1f MB before, peak %.1f MB", len(bomb), j.State, float64(idle)/(1<<20), float64(peak)/(1<<20))
			if j.State != "failed" || !strings.Contains(j.Error, want) {
				t.Errorf("job %+v; want failed with an error containing %q", j, want)
			}
			if out := c.replicas[0].proc.Out.String(); strings.Count(out, "index sync failed") != failures+1 || !strings.Contains(out, "sitemap.xml.gz: larger than") {
				t.Error("serve's log does not say the sync failed on the sitemap's size")
			}
			if peak-idle >= 100<<20 {
				t.Errorf("resident set peaked at %.1f MB, %.1f MB above the %.1f MB before; want less than 100 MB above",
					float64(peak)/(1<<20), float64(peak-idle)/(1<<20), float64(idle)/(1<<20))
			}
			var after int
			if err := db.QueryRow(context.Background(), `SELECT count(*) FROM pages`).Scan(&after); err != nil || after != before {
				t.Errorf("%d pages indexed after the bomb (%v); want the %d before", after, err, before)
			}
		})
	}
}

// gzipBomb is a gzip file of mb members, each 1 MiB of one urlset entry followed by
// blanks to 16 KiB, over and over (the first member opens the urlset): valid XML of
// small tokens, which only the protocol's 50 MB a file stops. Each member is compressed
// once and repeated.
func gzipBomb(t *testing.T, mb int) []byte {
	unit := []byte("<url><loc>/a</loc></url>\n")
	unit = append(unit, bytes.Repeat([]byte(" "), 16<<10-len(unit))...)
	head := []byte(`<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	out := gzipOnce(t, append(head, bytes.Repeat(unit, 63)...))
	member := gzipOnce(t, bytes.Repeat(unit, 64))
	for range mb - 1 {
		out = append(out, member...)
	}
	return out
}

func gzipOnce(t *testing.T, p []byte) []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zw.Write(p)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// procStatus is a field of /proc/PID/status (VmRSS, VmHWM) in bytes.
func procStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc to read the resident set from: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("%s: %q", field, line)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
