package app_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// TestIngestSitemapRecrawl: a second ingest of an unchanged site downloads no page body
// (every page a 304) and embeds nothing; an edited page is re-embedded and found by its
// new words; a page gone from the sitemap is removed; with lastmod in the sitemap, pages
// whose lastmod did not move are not requested at all.
func TestIngestSitemapRecrawl(t *testing.T) {
	paths := []string{"/a", "/b", "/c", "/d", "/e"}
	e := newIngestEnv(t, paths...)
	st := e.ingest(t, nil)
	if st.Added != 5 || st.ChunksEmbedded == 0 || st.BytesFetched == 0 {
		t.Fatalf("first ingest: %+v", st)
	}
	e.site.counts()
	calls := e.fake.Calls()

	st = e.ingest(t, nil)
	requests, bodies := e.site.counts()
	if st.Unchanged != 5 || st.NotModified != 5 || st.BytesFetched != 0 || len(bodies) != 0 || e.fake.Calls() != calls {
		t.Fatalf("unchanged re-ingest: %+v; bodies served %v, %d provider calls", st, bodies, e.fake.Calls()-calls)
	}
	for _, p := range paths {
		if requests[p] != 1 {
			t.Errorf("%s requested %d times, want once (conditionally)", p, requests[p])
		}
	}

	e.site.set(func() {
		e.site.pages["/b"] = "The page /b now tells of a zeppelin hangar."
		delete(e.site.pages, "/e")
	})
	st = e.ingest(t, nil)
	_, bodies = e.site.counts()
	if st.Updated != 1 || st.Removed != 1 || st.NotModified != 3 || e.fake.Calls() == calls || !maps.Equal(bodies, map[string]int{"/b": 1}) {
		t.Fatalf("after an edit and a removal: %+v; bodies served %v", st, bodies)
	}
	hits, err := postgres.NewSiteIndex(e.db, 384).Search(context.Background(), sitesearch.Query{Text: "zeppelin hangar", Limit: 5})
	if err != nil || len(hits) == 0 || !strings.HasSuffix(hits[0].URL, "/b") {
		t.Fatalf("the edit is not searchable: %+v %v", hits, err)
	}
	if got := slices.Sorted(maps.Keys(e.stored(t))); !slices.Equal(got, []string{"/a", "/b", "/c", "/d"}) {
		t.Fatalf("stored pages %v after /e left the sitemap", got)
	}

	// With lastmod: the first run stores it (every page asked conditionally); the next
	// requests only the page whose lastmod moved.
	day := time.Date(2024, 11, 14, 0, 0, 0, 0, time.UTC)
	e.site.set(func() {
		for p := range e.site.pages {
			e.site.lastmod[p] = day
		}
	})
	if st = e.ingest(t, nil); st.NotModified != 4 || st.Skipped != 0 {
		t.Fatalf("lastmod first seen: %+v", st)
	}
	e.site.counts()
	e.site.set(func() {
		e.site.lastmod["/c"] = day.Add(time.Hour)
		e.site.pages["/c"] = "The page /c now tells of an airship."
	})
	calls = e.fake.Calls()
	st = e.ingest(t, nil)
	requests, bodies = e.site.counts()
	delete(requests, "/sitemap.xml")
	delete(requests, "/robots.txt")
	if st.Skipped != 3 || st.Unchanged != 3 || st.Updated != 1 || st.Pages != 4 || e.fake.Calls() == calls {
		t.Errorf("lastmod moved on one page: %+v", st)
	}
	if diff := cmp.Diff(map[string]int{"/c": 1}, requests); diff != "" {
		t.Errorf("pages requested (-want +got):\n%s", diff)
	}
	if !maps.Equal(bodies, map[string]int{"/c": 1}) {
		t.Errorf("bodies served %v", bodies)
	}
}

// TestIngestSitemapPartial: given URLs, the ingest fetches just those, removes the one
// that answers 404, and leaves the other pages alone; it reads no sitemap.
func TestIngestSitemapPartial(t *testing.T) {
	e := newIngestEnv(t, "/a", "/b", "/c", "/d")
	e.ingest(t, nil)
	e.site.counts()
	e.site.set(func() {
		e.site.pages["/a"] = "The page /a now tells of a zeppelin."
		delete(e.site.pages, "/b")
		e.site.pages["/new"] = "A page the sitemap does not list yet."
	})
	base := e.site.srv.URL
	st := e.ingest(t, []string{base + "/a", base + "/b", base + "/new", base + "/a"})
	requests, _ := e.site.counts()
	delete(requests, "/robots.txt")
	if st.Updated != 1 || st.Removed != 1 || st.Added != 1 || st.Pages != 2 {
		t.Errorf("partial ingest: %+v", st)
	}
	if diff := cmp.Diff(map[string]int{"/a": 1, "/b": 1, "/new": 1}, requests); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if got := slices.Sorted(maps.Keys(e.stored(t))); !slices.Equal(got, []string{"/a", "/c", "/d", "/new"}) {
		t.Errorf("stored pages %v", got)
	}
}
