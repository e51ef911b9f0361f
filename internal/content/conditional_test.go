package content

import (
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

// validatorSite serves pages with an ETag and a Last-Modified, answers 304 to a request
// that carries either of them unchanged, and counts the bodies it sends and their bytes.
type validatorSite struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies map[string]int
	bytes  int64
	conds  map[string]string // the last If-None-Match / If-Modified-Since of each path
}

const validatorModified = "Wed, 13 Nov 2024 10:00:00 GMT"

func newValidatorSite(t *testing.T) *validatorSite {
	t.Helper()
	s := &validatorSite{bodies: map[string]int{}, conds: map[string]string{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		etag := `"v1-` + r.URL.Path + `"`
		if r.URL.Path == "/liar" {
			w.WriteHeader(http.StatusNotModified) // to a request that asked nothing
			return
		}
		w.Header().Set("ETag", etag)
		w.Header().Set("Last-Modified", validatorModified)
		s.mu.Lock()
		s.conds[r.URL.Path] = r.Header.Get("If-None-Match") + "|" + r.Header.Get("If-Modified-Since")
		s.mu.Unlock()
		if inm := r.Header.Get("If-None-Match"); inm == etag || (inm == "" && r.Header.Get("If-Modified-Since") == validatorModified) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		body := crawlTestPage("Page " + r.URL.Path)
		s.mu.Lock()
		s.bodies[r.URL.Path]++
		s.bytes += int64(len(body))
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func TestFetchConditional(t *testing.T) {
	site := newValidatorSite(t)
	u := func(p string) string { return site.srv.URL + p }
	lastmod := time.Date(2024, 11, 14, 0, 0, 0, 0, time.UTC)
	targets := []Target{
		{URL: u("/new"), Lastmod: lastmod},                          // nothing known: a full fetch
		{URL: u("/same"), ETag: `"v1-/same"`, LastModified: "x"},    // the ETag matches
		{URL: u("/by-date"), LastModified: validatorModified},       // only the date is known
		{URL: u("/edited"), ETag: `"v0-/edited"`, Lastmod: lastmod}, // an old ETag
		{URL: u("/liar")}, // a 304 to an unconditional request
	}
	c := Crawler{IgnoreRobots: true}
	docs := map[string]Document{}
	stats, err := c.FetchTargets(context.Background(), targets, func(d *Document) error {
		docs[strings.TrimPrefix(d.URL, site.srv.URL)] = *d
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if stats.Pages != 2 || stats.NotModified != 2 || stats.Skipped != 1 || stats.Failed != 0 {
		t.Errorf("stats %+v, want 2 pages, 2 not modified, 1 skipped", stats)
	}
	site.mu.Lock()
	defer site.mu.Unlock()
	if stats.BytesFetched != site.bytes || site.bytes == 0 {
		t.Errorf("%d bytes fetched, the server sent %d", stats.BytesFetched, site.bytes)
	}
	if diff := cmp.Diff(map[string]int{"/new": 1, "/edited": 1}, site.bodies); diff != "" {
		t.Errorf("bodies served (-want +got):\n%s", diff)
	}
	wantConds := map[string]string{"/new": "|", "/same": `"v1-/same"|x`, "/by-date": "|" + validatorModified, "/edited": `"v0-/edited"|`}
	if diff := cmp.Diff(wantConds, site.conds); diff != "" {
		t.Errorf("conditional headers sent (-want +got):\n%s", diff)
	}
	for path, want := range map[string]struct {
		notModified bool
		etag        string
		lastmod     time.Time
	}{
		"/new":     {etag: `"v1-/new"`, lastmod: lastmod},
		"/same":    {notModified: true, etag: `"v1-/same"`},
		"/by-date": {notModified: true, etag: `"v1-/by-date"`},
		"/edited":  {etag: `"v1-/edited"`, lastmod: lastmod},
	} {
		d, ok := docs[path]
		switch {
		case !ok:
			t.Errorf("%s: no document", path)
		case d.NotModified != want.notModified || d.ETag != want.etag || d.LastModified != validatorModified || !d.Lastmod.Equal(want.lastmod) || d.Path != path:
			t.Errorf("%s: document %+v, want not modified %v, ETag %s, Last-Modified %s, lastmod %v", path, d, want.notModified, want.etag, validatorModified, want.lastmod)
		case d.NotModified && (d.Title != "" || len(d.Sections) > 0):
			t.Errorf("%s: a 304 with content: %+v", path, d)
		case !d.NotModified && d.Title != "Page "+path:
			t.Errorf("%s: title %q", path, d.Title)
		}
	}
	if _, ok := docs["/liar"]; ok || !slices.Equal(stats.FailedURLs, nil) {
		t.Errorf("an unasked-for 304 was taken for a page: %+v", stats)
	}
}
