package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/app"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
	"github.com/sitetools/sitetools/tools"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// indexedEnv serves the service over a database that holds the demo site's index, as
// `sitetools ingest --dir deploy/demo/site --base-url https://site.example` builds it,
// with the test tools and more.
func indexedEnv(t *testing.T, env map[string]string, more ...tools.Tool) (*testEnv, *postgres.DB) {
	t.Helper()
	db := pgtest.NewDB(t)
	cfg := testConfig(t, "postgres://unused", env)
	in, err := app.NewIngester(cfg.Embeddings, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.Sync(context.Background(), "dir:demo", sitesearch.DirWalk(demoSite, "https://site.example")); err != nil {
		t.Fatal(err)
	}
	te := newTestEnv()
	te.serve(t, cfg, app.Parts{DB: db}, more...)
	return te, db
}

// indexedPaths are the paths of the demo site's pages the index holds, by whether they
// are under /de/.
func indexedPaths(t *testing.T) (root, de []string) {
	for p, d := range demoPages(t) {
		switch {
		case d.NoIndex:
		case strings.HasPrefix(p, "/de/"):
			de = append(de, p)
		default:
			root = append(root, p)
		}
	}
	return root, de
}

var (
	mdLink   = regexp.MustCompile(`\[([^\]]+)\]\(([^)\s]+)\)`)
	toolLine = regexp.MustCompile("(?m)^- `([^`]+)`: (.+)$")
)

// TestLLMSTxt: /llms.txt and /de/llms.txt pass Lighthouse's llms-txt audit (an H1, a
// Markdown link, 50 characters), have llmstxt.org's shape, list every indexed page of
// their language section once, each link answering, and name every tool of the
// registry with the description GET /api/chat/tools serves.
func TestLLMSTxt(t *testing.T) {
	te, _ := indexedEnv(t, nil)
	root, de := indexedPaths(t)
	var catalog struct{ Tools []tools.Definition }
	if err := json.Unmarshal(te.do(t, http.MethodGet, "/api/chat/tools", nil, nil).body, &catalog); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, pagesHeading string
		pages              []string
		other              string // the other language's file
	}{
		{"/llms.txt", "## Pages", root, "https://site.example/de/llms.txt"},
		{"/de/llms.txt", "## Seiten", de, "https://site.example/llms.txt"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			r := te.do(t, http.MethodGet, tc.path, nil, nil)
			if r.status != http.StatusOK || r.header.Get("Content-Type") != "text/plain; charset=utf-8" {
				t.Fatalf("status %d, type %q: %s", r.status, r.header.Get("Content-Type"), r.body)
			}
			text := string(r.body)
			// Lighthouse 13.5's llms-txt audit, as core/audits/agentic/llms-txt.js has it.
			if !regexp.MustCompile(`(?m)^\s*#\s+.+`).MatchString(text) || !regexp.MustCompile(`\[.+\]\(.+\)`).MatchString(text) || len(text) < 50 {
				t.Errorf("fails Lighthouse's llms-txt audit:\n%s", text)
			}
			checkLLMSShape(t, text, "# Northwind Lane Consulting", tc.pagesHeading)
			checkLLMSTools(t, text, catalog.Tools)
			checkLLMSLinks(t, te, text, tc.pages, tc.other)
		})
	}
}

// checkLLMSShape: the H1, then a summary blockquote, then H2 sections, the pages' among
// them.
func checkLLMSShape(t *testing.T, text, h1, pagesHeading string) {
	t.Helper()
	lines := strings.Split(text, "\n")
	if lines[0] != h1 || lines[1] != "" || !strings.HasPrefix(lines[2], "> ") || len(lines[2]) < 40 {
		t.Errorf("does not begin with %q and a summary:\n%s", h1, strings.Join(lines[:min(len(lines), 4)], "\n"))
	}
	if strings.Count(text, "\n# ") != 0 {
		t.Errorf("more than one H1")
	}
	if !strings.Contains(text, "\n"+pagesHeading+"\n") {
		t.Errorf("no section %q", pagesHeading)
	}
}

// checkLLMSTools: the MCP endpoint and every tool of the catalog with its description,
// one line each, in the catalog's order.
func checkLLMSTools(t *testing.T, text string, catalog []tools.Definition) {
	t.Helper()
	if !strings.Contains(text, "(https://site.example/mcp) (Streamable HTTP, ") {
		t.Errorf("the MCP endpoint is not named with its transport")
	}
	var want, got []string
	for _, d := range catalog {
		want = append(want, d.Name+": "+strings.Join(strings.Fields(d.Description), " "))
	}
	for _, m := range toolLine.FindAllStringSubmatch(text, -1) {
		got = append(got, m[1]+": "+m[2])
	}
	if !slices.Equal(got, want) {
		t.Errorf("tools\n%q\nwant the catalog's\n%q", got, want)
	}
}

// checkLLMSLinks: every page of the section is linked once, as Markdown, and every link
// answers through the service: the pages' renderings and the other language's file.
func checkLLMSLinks(t *testing.T, te *testEnv, text string, pages []string, other string) {
	t.Helper()
	var linked []string
	for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
		u, err := url.Parse(m[2])
		if err != nil || u.Host != "site.example" {
			t.Errorf("link %s is not on the site", m[0])
			continue
		}
		r := te.do(t, http.MethodGet, u.Path, nil, nil)
		switch {
		case strings.HasSuffix(u.Path, ".md"):
			if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/markdown") {
				t.Errorf("%s: %d %s", m[0], r.status, r.header.Get("Content-Type"))
			}
			p := strings.TrimSuffix(strings.TrimSuffix(u.Path, ".md"), "index.html")
			linked = append(linked, p)
		case u.Path == "/mcp":
			// Streamable HTTP, stateless: POST only.
			if r.status != http.StatusMethodNotAllowed {
				t.Errorf("%s: GET %d", m[0], r.status)
			}
		case r.status != http.StatusOK:
			t.Errorf("%s: %d", m[0], r.status)
		}
	}
	slices.Sort(linked)
	slices.Sort(pages)
	if !slices.Equal(linked, pages) {
		t.Errorf("pages linked %q\nwant %q", linked, pages)
	}
	if !strings.Contains(text, "]("+other+")") {
		t.Errorf("no link to %s", other)
	}
}

// TestLLMSTxtFollowsTheRegistry: a tool added to the registry is in llms.txt at once,
// with its description, and the file's ETag changes: nothing in it is written by hand.
func TestLLMSTxtFollowsTheRegistry(t *testing.T) {
	te, _ := indexedEnv(t, nil)
	before := te.do(t, http.MethodGet, "/llms.txt", nil, nil)
	const description = "Finds the opening hours of a day.\nAsk it before you visit."
	if err := te.App.Registry().Add(tools.Tool{Name: "opening_hours", Description: description,
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Handler:     func(context.Context, json.RawMessage) (*tools.Result, error) { return tools.TextResult("9–17"), nil }}); err != nil {
		t.Fatal(err)
	}
	after := te.do(t, http.MethodGet, "/llms.txt", nil, map[string]string{"If-None-Match": before.header.Get("ETag")})
	if after.status != http.StatusOK || after.header.Get("ETag") == before.header.Get("ETag") {
		t.Fatalf("status %d, ETag %q then %q", after.status, before.header.Get("ETag"), after.header.Get("ETag"))
	}
	if want := "\n- `opening_hours`: Finds the opening hours of a day. Ask it before you visit.\n"; !strings.Contains(string(after.body), want) {
		t.Errorf("the new tool is not listed as %q:\n%s", want, after.body)
	}
}

// TestLLMSTxtCaching: ETag and Cache-Control, 304 on If-None-Match, HEAD, 404 for a
// language the site does not have, and a new file once the index changed.
func TestLLMSTxtCaching(t *testing.T) {
	te, db := indexedEnv(t, nil)
	first := te.do(t, http.MethodGet, "/llms.txt", nil, nil)
	etag := first.header.Get("ETag")
	if !regexp.MustCompile(`^"[A-Za-z0-9_-]{22}"$`).MatchString(etag) || first.header.Get("Cache-Control") != "public, max-age=300" {
		t.Fatalf("ETag %q, Cache-Control %q", etag, first.header.Get("Cache-Control"))
	}
	for _, tc := range []struct {
		name, method, path string
		header             map[string]string
		status             int
		code               string
	}{
		{"not modified", http.MethodGet, "/llms.txt", map[string]string{"If-None-Match": etag}, http.StatusNotModified, ""},
		{"not modified, weak", http.MethodGet, "/llms.txt", map[string]string{"If-None-Match": `"other", W/` + etag}, http.StatusNotModified, ""},
		{"head", http.MethodHead, "/llms.txt", nil, http.StatusOK, ""},
		{"a language the site lacks", http.MethodGet, "/fr/llms.txt", nil, http.StatusNotFound, "not_found"},
		{"a folder that is no language", http.MethodGet, "/blog/llms.txt", nil, http.StatusNotFound, "not_found"},
		{"no such name", http.MethodGet, "/Deutsch/llms.txt", nil, http.StatusNotFound, "not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := te.do(t, tc.method, tc.path, nil, tc.header)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.code != "" {
				checkErrorCode(t, r, tc.code)
			}
			if tc.status != http.StatusOK {
				return
			}
			if len(r.body) != 0 || r.header.Get("Content-Length") != fmt.Sprint(len(first.body)) || r.header.Get("ETag") != etag {
				t.Errorf("HEAD: body %d bytes, Content-Length %q, ETag %q", len(r.body), r.header.Get("Content-Length"), r.header.Get("ETag"))
			}
		})
	}

	t.Run("the index changed", func(t *testing.T) {
		te.App.SetLLMSRecheck(0)
		if _, err := db.Pool.Exec(context.Background(), `INSERT INTO pages (url, path, title, lang, body, content_hash, source)
			VALUES ('https://site.example/careers', '/careers', 'Careers', 'en', 'We are hiring a data engineer in Fennbrück.', 'x', 'dir:demo')`); err != nil {
			t.Fatal(err)
		}
		r := te.do(t, http.MethodGet, "/llms.txt", nil, map[string]string{"If-None-Match": etag})
		if r.status != http.StatusOK || !strings.Contains(string(r.body), "- [Careers](https://site.example/careers.md): We are hiring a data engineer in Fennbrück.\n") {
			t.Errorf("status %d, the new page is not listed:\n%s", r.status, r.body)
		}
	})
}

// TestLLMSTxtBounded: on a site of thousands of pages, llms.txt lists the most prominent
// (the fewest path segments, then the shortest path), says how many it leaves out, and
// stays small.
func TestLLMSTxtBounded(t *testing.T) {
	te, db := indexedEnv(t, nil)
	const extra = 3000
	if _, err := db.Pool.Exec(context.Background(), `INSERT INTO pages (url, path, title, lang, body, content_hash, source)
		SELECT 'https://site.example/products/' || g || '/spec', '/products/' || g || '/spec', 'Product ' || g, 'en',
		       'Product ' || g || ' is one of many. ' || repeat('More text. ', 500), 'x', 'dir:demo'
		FROM generate_series(1, $1) g`, extra); err != nil {
		t.Fatal(err)
	}
	root, _ := indexedPaths(t)
	r := te.do(t, http.MethodGet, "/llms.txt", nil, nil)
	text := string(r.body)
	links := mdLink.FindAllStringSubmatch(text, -1)
	pageLinks := 0
	for _, m := range links {
		if strings.HasSuffix(m[2], ".md") {
			pageLinks++
		}
	}
	if pageLinks != 200 {
		t.Errorf("%d pages linked, want 200", pageLinks)
	}
	if want := fmt.Sprintf("lists the 200 most prominent of %d pages", len(root)+extra); !strings.Contains(text, want) {
		t.Errorf("does not say %q", want)
	}
	for _, p := range root {
		if !strings.Contains(text, "(https://site.example"+strings.TrimSuffix(p, "/")) {
			t.Errorf("%s, a page of one or two segments, is left out", p)
		}
	}
	if !strings.Contains(text, "/products/1/spec.md)") || strings.Contains(text, "/products/1000/spec.md)") {
		t.Errorf("the shortest product paths are not the ones listed")
	}
	if len(text) > 64<<10 {
		t.Errorf("llms.txt is %d bytes", len(text))
	}
}

// TestLLMSTxtWithoutPages: an empty index still has a file that passes the audit: the
// host's name, the MCP server and its tools.
func TestLLMSTxtWithoutPages(t *testing.T) {
	te := newEnv(t, nil)
	start := time.Now()
	r := te.do(t, http.MethodGet, "/llms.txt", nil, nil)
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	text := string(r.body)
	checkLLMSShape(t, text, "# site.example", "## MCP server")
	if !strings.Contains(text, "- `echo`: Returns its text, count times.\n") {
		t.Errorf("the tools are not listed:\n%s", text)
	}
	t.Logf("%d bytes in %v", len(text), time.Since(start))
}

func checkErrorCode(t *testing.T, r response, code string) {
	t.Helper()
	var e struct{ Error struct{ Code string } }
	if err := json.Unmarshal(r.body, &e); err != nil || e.Error.Code != code {
		t.Errorf("error code %q, want %q: %s", e.Error.Code, code, r.body)
	}
}
