package content

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestRobotsNoIndex(t *testing.T) {
	for _, tc := range []struct {
		directives string
		want       bool
	}{
		{"noindex", true},
		{"NOINDEX", true},
		{"noindex, follow", true},
		{"follow,noindex", true},
		{" NoIndex ,nofollow", true},
		{"none", true},
		{"max-snippet: 20, noindex", true},
		{"", false},
		{"index, follow", false},
		{"nofollow", false},
		{"noindexing", false},
		{"noarchive, nosnippet", false},
	} {
		if got := robotsNoIndex(tc.directives); got != tc.want {
			t.Errorf("robotsNoIndex(%q) = %v, want %v", tc.directives, got, tc.want)
		}
	}
}

func TestHeaderNoIndex(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
		want   bool
	}{
		{"none", nil, false},
		{"noindex", []string{"noindex"}, true},
		{"in a list, any case", []string{"NoFollow, NOINDEX"}, true},
		{"none directive", []string{"none"}, true},
		{"one of several headers", []string{"noarchive", "noindex"}, true},
		{"a directive with a value before it", []string{"unavailable_after: 2030-01-01, noindex"}, true},
		{"for another crawler only", []string{"googlebot: noindex"}, false},
		{"another crawler's and ours", []string{"otherbot: noindex", "nofollow"}, false},
		{"index", []string{"index, follow"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tc.values {
				h.Add("X-Robots-Tag", v)
			}
			if got := headerNoIndex(h); got != tc.want {
				t.Errorf("headerNoIndex(%q) = %v, want %v", tc.values, got, tc.want)
			}
		})
	}
}

func TestParseNoIndex(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		want bool
	}{
		{"markdown without front matter", "# Page\n\nText.\n", false},
		{"markdown noindex true", "---\ntitle: Guide\nnoindex: true\n---\n# Guide\n\nText.\n", true},
		{"markdown noindex false", "---\ntitle: Guide\nnoindex: false\n---\n# Guide\n\nText.\n", false},
		{"markdown robots key", "---\nrobots: noindex, follow\n---\n# Guide\n\nText.\n", true},
		{"markdown robots index", "---\nrobots: index\n---\n# Guide\n\nText.\n", false},
		{"markdown that only mentions noindex", "# Guide\n\nUse noindex: true to hide a page.\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := ParseMarkdown([]byte(tc.src), "https://example.com/guide")
			if err != nil {
				t.Fatal(err)
			}
			if doc.NoIndex != tc.want {
				t.Errorf("NoIndex = %v, want %v", doc.NoIndex, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name string
		head string
		want bool
	}{
		{"no robots meta", `<title>T</title>`, false},
		{"noindex", `<meta name="robots" content="noindex">`, true},
		{"name and content in other case", `<meta NAME="Robots" content="NoIndex, Follow">`, true},
		{"none", `<meta name="robots" content="none">`, true},
		{"index, follow", `<meta name="robots" content="index, follow">`, false},
		{"nofollow only", `<meta name="robots" content="nofollow">`, false},
		{"another crawler's meta", `<meta name="googlebot" content="noindex">`, false},
		{"noindex in the body's text", `<title>noindex</title>`, false},
	} {
		t.Run("html "+tc.name, func(t *testing.T) {
			src := fmt.Sprintf(`<!doctype html><html lang="en"><head>%s</head><body><main><h1>Page</h1><p>Some text of the page, long enough to read.</p></main></body></html>`, tc.head)
			doc, err := ParseHTML([]byte(src), "https://example.com/page")
			if err != nil {
				t.Fatal(err)
			}
			if doc.NoIndex != tc.want {
				t.Errorf("NoIndex = %v, want %v", doc.NoIndex, tc.want)
			}
		})
	}
}

// TestWalkDirLeavesOutNoIndex: a page that asks not to be indexed is neither yielded nor
// an error, so an ingest removes it.
func TestWalkDirLeavesOutNoIndex(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"index.md":       "---\ntitle: Home\n---\n# Home\n\nWelcome.\n",
		"guide.md":       "---\ntitle: Guide\nnoindex: true\n---\n# Guide\n\nHow to try it.\n",
		"old.html":       `<html><head><title>Old</title><meta name="robots" content="noindex, follow"></head><body><p>Old text.</p></body></html>`,
		"kept.html":      `<html><head><title>Kept</title><meta name="robots" content="index"></head><body><p>Kept text.</p></body></html>`,
		"blog/draft.md":  "---\nrobots: none\n---\n# Draft\n\nNot yet.\n",
		"blog/posted.md": "# Posted\n\nPublished.\n",
	}
	for name, src := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	if err := WalkDir(root, "https://example.com", func(d *Document) error {
		got = append(got, d.Path)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/blog/posted", "/", "/kept.html"}, got); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}
}

// TestFetchSkipsNoIndex: the crawler skips a page whose robots meta element or
// X-Robots-Tag header says noindex (skipped, not failed: an ingest removes it), and
// follows a header meant for another crawler.
func TestFetchSkipsNoIndex(t *testing.T) {
	page := func(head string) string {
		return fmt.Sprintf(`<!doctype html><html lang="en"><head><title>T</title>%s</head><body><main><h1>Page</h1><p>Some text of the page, long enough to read.</p></main></body></html>`, head)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/plain", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, page(""))
	})
	mux.HandleFunc("/meta", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, page(`<meta name="robots" content="NOINDEX, follow">`))
	})
	mux.HandleFunc("/header", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("X-Robots-Tag", "noindex")
		fmt.Fprint(w, page(""))
	})
	mux.HandleFunc("/other-bot", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("X-Robots-Tag", "googlebot: noindex")
		fmt.Fprint(w, page(""))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	var got []string
	c := Crawler{IgnoreRobots: true}
	stats, err := c.Fetch(context.Background(), []string{srv.URL + "/plain", srv.URL + "/meta", srv.URL + "/header", srv.URL + "/other-bot"},
		func(d *Document) error {
			got = append(got, d.Path)
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if diff := cmp.Diff([]string{"/other-bot", "/plain"}, got); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(CrawlStats{Pages: 2, Skipped: 2}, stats, cmpopts.IgnoreFields(CrawlStats{}, "BytesFetched")); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
}
