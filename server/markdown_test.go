package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/sitetools/sitetools/internal/postgres"
)

const (
	markdownType = "text/markdown; charset=utf-8"
	// What Chromium sends for a page.
	browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8"
)

// TestMarkdownPages: every indexed page as Markdown at <path>.md and at its own path
// with Accept: text/markdown, from the index, whether sitetools renders the page's HTML
// (SITE_PAGES_DIR) or a frontend does; the HTML pages, their 404s and the widget's files
// stay as they were.
func TestMarkdownPages(t *testing.T) {
	for _, withPages := range []bool{true, false} {
		name, env := "a frontend renders the pages", map[string]string{"WEBMCP_RELAY_PORT": "47123"}
		if withPages {
			name, env["SITE_PAGES_DIR"] = "sitetools renders the pages", demoSite
		}
		t.Run(name, func(t *testing.T) {
			te, db := indexedEnv(t, env)
			for _, tc := range markdownCases(withPages) {
				t.Run(tc.name, func(t *testing.T) {
					r := te.do(t, tc.method, tc.path, nil, tc.header)
					if r.status != tc.status || r.header.Get("Content-Type") != tc.contentType {
						t.Fatalf("%d %q, want %d %q: %.300s", r.status, r.header.Get("Content-Type"), tc.status, tc.contentType, r.body)
					}
					if tc.code != "" {
						checkErrorCode(t, r, tc.code)
					}
					if got := r.header.Get("Vary"); got != tc.vary {
						t.Errorf("Vary %q, want %q", got, tc.vary)
					}
					if tc.page != "" {
						checkMarkdown(t, db, r, tc.page, tc.method == http.MethodHead)
					}
				})
			}
		})
	}
}

type markdownCase struct {
	name, method, path string
	header             map[string]string
	status             int
	contentType, vary  string
	code               string // of an error
	page               string // the indexed page the answer renders
}

func markdownCases(withPages bool) []markdownCase {
	md := map[string]string{"Accept": "text/markdown"}
	get, head := http.MethodGet, http.MethodHead
	html := "text/html; charset=UTF-8"
	json := "application/json"
	cases := []markdownCase{
		{"a page.md", get, "/pricing.md", nil, 200, markdownType, "", "", "/pricing"},
		{"a page in German", get, "/de/datenschutz.md", nil, 200, markdownType, "", "", "/de/datenschutz"},
		{"the home page", get, "/index.html.md", nil, 200, markdownType, "", "", "/"},
		{"a folder's page", get, "/blog/index.html.md", nil, 200, markdownType, "", "", "/blog/"},
		{"a folder's page without its slash", get, "/blog.md", nil, 200, markdownType, "", "", "/blog/"},
		{"a language's home", get, "/de/index.html.md", nil, 200, markdownType, "", "", "/de/"},
		{"HEAD of a page.md", head, "/services/web-platforms.md", nil, 200, markdownType, "", "", "/services/web-platforms"},
		{"Accept: text/markdown", get, "/pricing", md, 200, markdownType, "Accept", "", "/pricing"},
		{"Accept: text/markdown, preferred to HTML", get, "/team/", map[string]string{"Accept": "text/markdown, text/html;q=0.9, */*;q=0.8"}, 200, markdownType, "Accept", "", "/team/"},
		{"Accept: text/markdown, a folder without its slash", get, "/blog", md, 200, markdownType, "Accept", "", "/blog/"},
		{"HEAD with Accept: text/markdown", head, "/de/contact", md, 200, markdownType, "Accept", "", "/de/contact"},
		{"not indexed", get, "/nowhere.md", nil, 404, json, "", "not_found", ""},
		{"not indexed, Accept: text/markdown", get, "/nowhere", md, 404, json, "Accept", "not_found", ""},
		{"noindex leaves a page out", get, "/try-it.md", nil, 404, json, "", "not_found", ""},
		{"the service's own paths are not pages", get, "/assets/site.css.md", nil, 404, json, "", "not_found", ""},
		{"the widget's files stay", get, "/webmcp/chat.js", md, 200, "text/javascript; charset=utf-8", "", "", ""},
		{"the API stays", get, "/api/chat/tools", md, 200, "application/json", "Origin", "", ""},
		{"POST is no reading", http.MethodPost, "/pricing.md", nil, 404, json, "", "not_found", ""},
	}
	if withPages {
		return append(cases,
			markdownCase{"a page without Accept", get, "/pricing", nil, 200, html, "Accept", "", ""},
			markdownCase{"a page for a browser", get, "/pricing", map[string]string{"Accept": browserAccept}, 200, html, "Accept", "", ""},
			markdownCase{"a page, Markdown refused", get, "/pricing", map[string]string{"Accept": "text/markdown;q=0, text/html"}, 200, html, "Accept", "", ""},
			markdownCase{"a page the index leaves out stays HTML", get, "/try-it", md, 200, html, "Accept", "", ""},
			markdownCase{"the 404 page", get, "/nowhere", map[string]string{"Accept": browserAccept}, 404, html, "Accept", "", ""},
		)
	}
	return append(cases,
		markdownCase{"a page without Accept is the frontend's", get, "/pricing", nil, 404, json, "Accept", "not_found", ""},
	)
}

// checkMarkdown: the rendering is the page's title as the H1, its URL, and the text the
// index holds of it (get_page's), whole; with an ETag that gives 304, and the page
// itself as the canonical URL.
func checkMarkdown(t *testing.T, db *postgres.DB, r response, path string, head bool) {
	t.Helper()
	p, err := postgres.NewSitePages(db).Page(context.Background(), path)
	if err != nil || p == nil {
		t.Fatalf("the index has no %s: %v", path, err)
	}
	if got, want := r.header.Get("Link"), "<"+p.URL+`>; rel="canonical"`; !strings.Contains(got, want) {
		t.Errorf("Link %q, want it to name %s", got, want)
	}
	if r.header.Get("ETag") == "" || r.header.Get("Cache-Control") != "no-cache" || r.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("ETag %q, Cache-Control %q, X-Content-Type-Options %q", r.header.Get("ETag"), r.header.Get("Cache-Control"), r.header.Get("X-Content-Type-Options"))
	}
	if head {
		if len(r.body) != 0 || r.header.Get("Content-Length") == "" {
			t.Errorf("HEAD: %d bytes, Content-Length %q", len(r.body), r.header.Get("Content-Length"))
		}
		return
	}
	text := string(r.body)
	head1 := "# " + p.Title + "\n\n"
	if !strings.HasPrefix(text, head1) || strings.Count(text, "\n# ") != 0 {
		t.Errorf("does not begin with %q, or has another H1:\n%.200s", head1, text)
	}
	body := strings.TrimSpace(p.Body)
	if first, rest, ok := strings.Cut(body, "\n"); ok && strings.HasPrefix(first, "# ") {
		body = strings.TrimSpace(rest)
	}
	if !strings.Contains(text, ": <"+p.URL+">\n\n"+body+"\n") {
		t.Errorf("not the URL and the indexed text of %s:\n%.300s", path, text)
	}
	if !strings.Contains(body, "\n## ") && path != "/de/" {
		t.Errorf("%s has no sections", path)
	}
}

// TestMarkdownRevalidates: a rendering's ETag gives 304.
func TestMarkdownRevalidates(t *testing.T) {
	te, _ := indexedEnv(t, nil)
	for _, tc := range []struct {
		path   string
		header map[string]string
	}{
		{"/pricing.md", nil},
		{"/pricing", map[string]string{"Accept": "text/markdown"}},
	} {
		first := te.do(t, http.MethodGet, tc.path, nil, tc.header)
		h := map[string]string{"If-None-Match": first.header.Get("ETag")}
		for k, v := range tc.header {
			h[k] = v
		}
		if r := te.do(t, http.MethodGet, tc.path, nil, h); r.status != http.StatusNotModified || len(r.body) != 0 {
			t.Errorf("%s: %d with %d bytes, want 304", tc.path, r.status, len(r.body))
		}
	}
}
