package server_test

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sitetools/sitetools/internal/app"

	"github.com/sitetools/sitetools/internal/content"

	"github.com/sitetools/sitetools/internal/config"

	"golang.org/x/net/html"

	"github.com/sitetools/sitetools/internal/postgres/pgtest"
)

const demoSite = "../deploy/demo/site"

// demoPages are the demo site's pages by path, as the index reads them.
func demoPages(t *testing.T) map[string]*content.Document {
	t.Helper()
	docs := map[string]*content.Document{}
	err := content.WalkDir(demoSite, "https://site.example", func(d *content.Document) error {
		docs[d.Path] = d
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) < 20 {
		t.Fatalf("only %d demo pages", len(docs))
	}
	return docs
}

func siteEnv(t *testing.T, env map[string]string) *testEnv {
	t.Helper()
	vars := map[string]string{"SITE_PAGES_DIR": demoSite, "WEBMCP_RELAY_PORT": "47123"}
	for k, v := range env {
		vars[k] = v
	}
	return newEnv(t, vars)
}

const wantCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self' ws://localhost:47123; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

func TestSitePages(t *testing.T) {
	te := siteEnv(t, nil)
	docs := demoPages(t)
	for p, doc := range docs {
		t.Run(p, func(t *testing.T) {
			r := te.do(t, http.MethodGet, p, nil, map[string]string{"Accept": "text/html"})
			if r.status != http.StatusOK {
				t.Fatalf("status %d", r.status)
			}
			if strings.HasSuffix(p, ".pdf") {
				// A PDF of the pages' directory is served as the file it is.
				want, err := os.ReadFile(filepath.Join(demoSite, filepath.FromSlash(p)))
				if err != nil || r.header.Get("Content-Type") != "application/pdf" || !bytes.Equal(r.body, want) {
					t.Errorf("%s: content type %q, %d bytes, want the file's %d (%v)", p, r.header.Get("Content-Type"), len(r.body), len(want), err)
				}
				return
			}
			checkPageHeaders(t, r)
			root := parseHTML(t, r.body)
			if lang := attr(find(root, "html"), "lang"); lang != doc.Lang {
				t.Errorf("lang %q, want %q", lang, doc.Lang)
			}
			if title := text(find(root, "title")); !strings.HasPrefix(title, doc.Title) {
				t.Errorf("title %q, want it to start with %q", title, doc.Title)
			}
			for _, id := range []string{"sitetools-main", "sitetools-header", "sitetools-footer"} {
				if byID(root, id) == nil {
					t.Errorf("no element #%s", id)
				}
			}
			checkChatTag(t, root)
			checkNoInlineCode(t, root)
			ids := map[string]bool{}
			for _, n := range findAll(root, func(n *html.Node) bool { return attr(n, "id") != "" }) {
				if ids[attr(n, "id")] {
					t.Errorf("id %q is not unique", attr(n, "id"))
				}
				ids[attr(n, "id")] = true
			}
			// Every section the index links to (url#anchor) is an id on the page.
			for _, s := range doc.Sections {
				if s.Anchor != "" && byID(root, s.Anchor) == nil {
					t.Errorf("section %q: no element with id %q", s.Heading, s.Anchor)
				}
			}
			// The contact pages have the form; no other page has.
			form := byID(root, "sitetools-contact-form")
			if isContact := filepath.Base(p) == "contact"; isContact != (form != nil) {
				t.Fatalf("contact form present: %v", form != nil)
			}
			if form != nil {
				if attr(form, "method") != "dialog" || attr(form, "action") != "" {
					t.Errorf("the contact form could post somewhere: method %q action %q", attr(form, "method"), attr(form, "action"))
				}
				for _, name := range []string{"sitetools-contact-name", "sitetools-contact-email", "sitetools-contact-organisation", "sitetools-contact-topic", "sitetools-contact-message"} {
					if label := findAll(form, func(n *html.Node) bool { return n.Data == "label" && attr(n, "for") == name }); len(label) != 1 {
						t.Errorf("field %s has %d labels", name, len(label))
					}
				}
			}
		})
	}
}

func TestSiteLinksResolve(t *testing.T) {
	te := siteEnv(t, nil)
	seen := map[string]bool{}
	for p := range demoPages(t) {
		r := te.do(t, http.MethodGet, p, nil, nil)
		for _, a := range findAll(parseHTML(t, r.body), func(n *html.Node) bool { return n.Data == "a" }) {
			href := attr(a, "href")
			if !strings.HasPrefix(href, "/") || seen[href] {
				continue
			}
			seen[href] = true
			target, _, _ := strings.Cut(href, "#")
			if got := te.do(t, http.MethodGet, target, nil, nil); got.status != http.StatusOK {
				t.Errorf("%s links to %s: status %d", p, href, got.status)
			}
		}
	}
	if len(seen) < 20 {
		t.Fatalf("only %d internal links checked", len(seen))
	}
}

func TestSiteNotFoundAndRedirects(t *testing.T) {
	te := siteEnv(t, nil)
	for _, tc := range []struct {
		method, path string
		status       int
		html         bool
		lang         string
	}{
		{"GET", "/no-such-page", 404, true, "en"},
		{"GET", "/services/nope", 404, true, "en"},
		{"GET", "/de/nichts", 404, true, "de"},
		{"GET", "/case-studies/", 404, true, "en"},
		{"HEAD", "/no-such-page", 404, true, ""},
		{"GET", "/api/nope", 404, false, ""},
		{"GET", "/mcp/x", 404, false, ""},
		{"POST", "/no-such-page", 404, false, ""},
		{"GET", "/assets/nope.js", 404, false, ""},
	} {
		r := te.do(t, tc.method, tc.path, nil, nil)
		if r.status != tc.status {
			t.Errorf("%s %s: status %d, want %d", tc.method, tc.path, r.status, tc.status)
			continue
		}
		isHTML := strings.HasPrefix(r.header.Get("Content-Type"), "text/html")
		if isHTML != tc.html {
			t.Errorf("%s %s: Content-Type %q", tc.method, tc.path, r.header.Get("Content-Type"))
		}
		if !tc.html {
			if code, _, _ := r.errorBody(t); code != "not_found" {
				t.Errorf("%s %s: code %q", tc.method, tc.path, code)
			}
			continue
		}
		checkPageHeaders(t, r)
		if tc.method == "HEAD" {
			if len(r.body) != 0 {
				t.Errorf("HEAD has a body")
			}
			continue
		}
		root := parseHTML(t, r.body)
		if lang := attr(find(root, "html"), "lang"); lang != tc.lang {
			t.Errorf("%s: 404 page in %q, want %q", tc.path, lang, tc.lang)
		}
		checkChatTag(t, root)
	}

	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for from, to := range map[string]string{"/blog": "/blog/", "/contact/": "/contact", "/de": "/de/"} {
		resp, err := client.Get(te.Srv.URL + from)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != to {
			t.Errorf("%s: status %d, Location %q; want 301 to %s", from, resp.StatusCode, resp.Header.Get("Location"), to)
		}
	}

	head := te.do(t, http.MethodHead, "/pricing", nil, nil)
	get := te.do(t, http.MethodGet, "/pricing", nil, nil)
	if head.status != 200 || len(head.body) != 0 || head.header.Get("Content-Length") != get.header.Get("Content-Length") && get.header.Get("Content-Length") != "" {
		t.Errorf("HEAD /pricing: status %d, %d bytes, Content-Length %q", head.status, len(head.body), head.header.Get("Content-Length"))
	}
	if nm := te.do(t, http.MethodGet, "/pricing", nil, map[string]string{"If-None-Match": get.header.Get("ETag")}); nm.status != http.StatusNotModified {
		t.Errorf("If-None-Match: status %d", nm.status)
	}
}

func TestSiteNavigation(t *testing.T) {
	te := siteEnv(t, nil)
	labels := func(p, navLabel string) []string {
		root := parseHTML(t, te.do(t, http.MethodGet, p, nil, nil).body)
		nav := findAll(root, func(n *html.Node) bool { return n.Data == "nav" && attr(n, "aria-label") == navLabel })
		if len(nav) != 1 {
			t.Fatalf("%s: %d navs labelled %q", p, len(nav), navLabel)
		}
		var out []string
		for _, a := range findAll(nav[0], func(n *html.Node) bool { return n.Data == "a" }) {
			out = append(out, attr(a, "href"))
		}
		return out
	}
	main := labels("/", "Main")
	if main[len(main)-1] != "/contact" || !slices.Contains(main, "/services/") || slices.Contains(main, "/imprint") || slices.Contains(main, "/de/") {
		t.Errorf("main navigation %v", main)
	}
	if foot := labels("/", "Site information"); !slices.Equal(foot, []string{"/imprint", "/privacy", "/de/"}) {
		t.Errorf("footer %v", foot)
	}
	if de := labels("/de/", "Hauptnavigation"); !slices.Equal(de, []string{"/de/try-it", "/de/contact"}) {
		t.Errorf("German navigation %v", de)
	}
	// The German section's own privacy policy stands for the root's; the imprint is the root's.
	if foot := labels("/de/", "Informationen zur Website"); !slices.Equal(foot, []string{"/de/datenschutz", "/imprint", "/"}) {
		t.Errorf("German footer %v", foot)
	}
	// Each section points the widget at its own relay guide.
	for p, want := range map[string]string{"/pricing": "/try-it", "/de/contact": "/de/try-it"} {
		metas := findAll(parseHTML(t, te.do(t, http.MethodGet, p, nil, nil).body), func(n *html.Node) bool {
			return n.Data == "meta" && attr(n, "name") == "sitetools:guide"
		})
		if len(metas) != 1 || attr(metas[0], "content") != want {
			t.Errorf("%s: sitetools:guide %d metas, want %s", p, len(metas), want)
		}
	}
	// The relay guides are kept out of the site's index (front matter noindex), and say
	// so to other crawlers; the other pages do not.
	for p, want := range map[string]int{"/try-it": 1, "/de/try-it": 1, "/pricing": 0, "/de/": 0} {
		metas := findAll(parseHTML(t, te.do(t, http.MethodGet, p, nil, nil).body), func(n *html.Node) bool {
			return n.Data == "meta" && attr(n, "name") == "robots" && attr(n, "content") == "noindex"
		})
		if len(metas) != want {
			t.Errorf("%s: %d robots noindex metas, want %d", p, len(metas), want)
		}
	}
	root := parseHTML(t, te.do(t, http.MethodGet, "/pricing", nil, nil).body)
	current := findAll(root, func(n *html.Node) bool { return attr(n, "aria-current") == "page" })
	if len(current) != 1 || attr(current[0], "href") != "/pricing" {
		t.Errorf("aria-current on %d links", len(current))
	}
}

func TestSiteAssets(t *testing.T) {
	widget := filepath.Join(t.TempDir(), "webmcp.js")
	if err := os.WriteFile(widget, []byte("class WebMCP {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	te := siteEnv(t, map[string]string{"WEBMCP_WIDGET_PATH": widget})
	for path, ct := range map[string]string{
		"/webmcp/chat.js":   "text/javascript",
		"/webmcp/bridge.js": "text/javascript",
		"/webmcp/widget.js": "text/javascript",
		"/assets/site.js":   "text/javascript",
		"/assets/site.css":  "text/css",
	} {
		r := te.do(t, http.MethodGet, path, nil, nil)
		if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), ct) || len(r.body) == 0 {
			t.Errorf("%s: status %d, Content-Type %q", path, r.status, r.header.Get("Content-Type"))
			continue
		}
		if r.header.Get("X-Content-Type-Options") != "nosniff" || r.header.Get("Set-Cookie") != "" {
			t.Errorf("%s: headers %v", path, r.header)
		}
		if nm := te.do(t, http.MethodGet, path, nil, map[string]string{"If-None-Match": r.header.Get("ETag")}); nm.status != http.StatusNotModified {
			t.Errorf("%s: If-None-Match gave %d", path, nm.status)
		}
	}
	if r := te.do(t, http.MethodGet, "/webmcp/widget.js", nil, nil); string(r.body) != "class WebMCP {}\n" {
		t.Errorf("widget %q", r.body)
	}
}

func TestSiteWithoutPages(t *testing.T) {
	te := newEnv(t, nil)
	r := te.do(t, http.MethodGet, "/", nil, nil)
	if code, _, _ := r.errorBody(t); r.status != http.StatusNotFound || code != "not_found" {
		t.Fatalf("GET / without SITE_PAGES_DIR: status %d, code %q", r.status, code)
	}
	// The widget and the bridge are served for a site whose own frontend embeds them.
	for _, p := range []string{"/webmcp/chat.js", "/webmcp/bridge.js"} {
		if r := te.do(t, http.MethodGet, p, nil, nil); r.status != http.StatusOK {
			t.Fatalf("%s: status %d", p, r.status)
		}
	}
	// Without the widget (not installed next to the tests), only the widget is missing.
	if r := te.do(t, http.MethodGet, "/webmcp/widget.js", nil, nil); r.status != http.StatusNotFound {
		t.Fatalf("widget: status %d", r.status)
	}
}

func TestSiteConfigErrors(t *testing.T) {
	shadow := t.TempDir()
	if err := os.MkdirAll(filepath.Join(shadow, "api"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(shadow, "api", "chat.md"), []byte("# Chat\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	db := pgtest.NewDB(t)
	for name, env := range map[string]map[string]string{
		"missing pages dir":       {"SITE_PAGES_DIR": filepath.Join(t.TempDir(), "nope")},
		"pages dir is a file":     {"SITE_PAGES_DIR": "web_test.go"},
		"page shadows a route":    {"SITE_PAGES_DIR": shadow},
		"explicit widget missing": {"WEBMCP_WIDGET_PATH": filepath.Join(t.TempDir(), "widget.js")},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := app.Wire(testConfig(t, "postgres://unused", env), app.Parts{DB: db}); err == nil {
				t.Fatal("New succeeded")
			}
		})
	}
	if _, err := config.Load(func(k string) string {
		return map[string]string{"DATABASE_URL": "postgres://x", "ADMIN_LISTEN_ADDR": "off", "WEBMCP_RELAY_PORT": "70000"}[k]
	}); err == nil || !strings.Contains(err.Error(), "WEBMCP_RELAY_PORT") {
		t.Fatalf("WEBMCP_RELAY_PORT=70000: %v", err)
	}
}

func checkPageHeaders(t *testing.T, r response) {
	t.Helper()
	if got := r.header.Get("Content-Security-Policy"); got != wantCSP {
		t.Errorf("CSP\n got %s\nwant %s", got, wantCSP)
	}
	if r.header.Get("Set-Cookie") != "" {
		t.Error("a cookie was set")
	}
	if r.header.Get("X-Content-Type-Options") != "nosniff" || !strings.EqualFold(r.header.Get("Content-Type"), "text/html; charset=utf-8") {
		t.Errorf("headers %v", r.header)
	}
}

// checkNoInlineCode fails for anything the CSP would block: inline scripts, inline
// styles, event-handler attributes, javascript: URLs, and assets from elsewhere.
func checkNoInlineCode(t *testing.T, root *html.Node) {
	t.Helper()
	scripts := 0
	for _, n := range findAll(root, func(*html.Node) bool { return true }) {
		if n.Type != html.ElementNode {
			continue
		}
		for _, a := range n.Attr {
			if strings.HasPrefix(a.Key, "on") || a.Key == "style" {
				t.Errorf("<%s %s=…> is inline code", n.Data, a.Key)
			}
			if (a.Key == "href" || a.Key == "src") && (strings.HasPrefix(strings.ToLower(strings.TrimSpace(a.Val)), "javascript:") || strings.HasPrefix(a.Val, "//")) {
				t.Errorf("<%s %s=%q>", n.Data, a.Key, a.Val)
			}
		}
		switch n.Data {
		case "script":
			scripts++
			if src := attr(n, "src"); !strings.HasPrefix(src, "/") || strings.HasPrefix(src, "//") || text(n) != "" {
				t.Errorf("script src=%q with %d bytes inline", src, len(text(n)))
			}
		case "style":
			t.Error("inline <style>")
		case "link":
			if href := attr(n, "href"); !strings.HasPrefix(href, "/") || strings.HasPrefix(href, "//") {
				t.Errorf("link to %q", href)
			}
		}
	}
	if scripts != 3 {
		t.Errorf("%d scripts, want the site's, the chat's and the search's", scripts)
	}
}

func parseHTML(t *testing.T, b []byte) *html.Node {
	t.Helper()
	n, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func findAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func find(n *html.Node, tag string) *html.Node {
	if all := findAll(n, func(n *html.Node) bool { return n.Data == tag }); len(all) > 0 {
		return all[0]
	}
	return nil
}

func byID(n *html.Node, id string) *html.Node {
	if all := findAll(n, func(n *html.Node) bool { return attr(n, "id") == id }); len(all) > 0 {
		return all[0]
	}
	return nil
}

func attr(n *html.Node, key string) string {
	if n == nil {
		return ""
	}
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func text(n *html.Node) string {
	if n == nil {
		return ""
	}
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.TrimSpace(b.String())
}

// checkChatTag checks that a page adds the chat the way any site does: one module
// script, /webmcp/chat.js, and no chat markup of its own.
func checkChatTag(t *testing.T, root *html.Node) {
	t.Helper()
	tags := findAll(root, func(n *html.Node) bool { return n.Data == "script" && attr(n, "src") == "/webmcp/chat.js" })
	if len(tags) != 1 || attr(tags[0], "type") != "module" {
		t.Errorf("%d script tags for /webmcp/chat.js, want one module script", len(tags))
	}
	if byID(root, "sitetools-chat-launcher") != nil || len(findAll(root, func(n *html.Node) bool { return n.Data == "sitetools-chat" })) > 0 {
		t.Errorf("the page carries chat markup of its own: the widget builds it")
	}
	// The site search: its module once, and its element in the header, as a dialog.
	search := findAll(root, func(n *html.Node) bool { return n.Data == "script" && attr(n, "src") == "/webmcp/search.js" })
	boxes := findAll(byID(root, "sitetools-header"), func(n *html.Node) bool { return n.Data == "sitetools-search" })
	if len(search) != 1 || attr(search[0], "type") != "module" || len(boxes) != 1 || !hasAttr(boxes[0], "modal") {
		t.Errorf("%d module scripts for /webmcp/search.js and %d <sitetools-search> in the header, want one of each (modal)", len(search), len(boxes))
	}
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}

func TestSiteOriginTrial(t *testing.T) {
	const token = "A4ELp8QIfdxBNZ0MK5O0U1gNcMm1e5mIxCb/8aTN1+Ww1Ln1cAUYcBf9TbdWcH3kDqNEa4lB2VvM0XSbPPZqkAYAAAB4eyJvcmlnaW4iOiJodHRwczovL2V4YW1wbGUuY29tOjQ0MyIsImZlYXR1cmUiOiJXZWJNQ1AiLCJleHBpcnkiOjE3OTk5OTk5OTl9"
	te := siteEnv(t, map[string]string{"WEBMCP_ORIGIN_TRIAL_TOKEN": token})
	for _, p := range []string{"/", "/pricing", "/no-such-page"} {
		r := te.do(t, http.MethodGet, p, nil, nil)
		if got := r.header.Get("Origin-Trial"); got != token {
			t.Errorf("%s: Origin-Trial %q", p, got)
		}
	}
	// Not on the API or the widget's files: the token is for documents.
	if r := te.do(t, http.MethodGet, "/webmcp/chat.js", nil, nil); r.header.Get("Origin-Trial") != "" {
		t.Errorf("Origin-Trial on a script")
	}
	if r := siteEnv(t, nil).do(t, http.MethodGet, "/", nil, nil); r.header.Get("Origin-Trial") != "" {
		t.Errorf("Origin-Trial without a token")
	}
}
