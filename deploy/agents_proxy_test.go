package deploy_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/postgres/pgtest"
	"github.com/sitetools/sitetools/internal/testkit"
)

// TestProxiesServeAgents: through the shipped nginx and Caddy configurations, with the
// site's pages at a frontend of their own, `curl /llms.txt`, `curl /pricing.md` and
// `curl -H 'Accept: text/markdown' /pricing` answer from sitetools (the binary, over the
// demo site's index), and the frontend keeps the pages' HTML, saying that it varies by
// Accept.
func TestProxiesServeAgents(t *testing.T) {
	if os.Getenv("TEST_DATABASE_URL") == "" {
		t.Skip("TEST_DATABASE_URL is not set: `make test` runs this test against the PostgreSQL with pgvector it starts")
	}
	sitetools := startIndexedSitetools(t)
	site := namedUpstream(t, "site")
	markdown := map[string]string{"Accept": "text/markdown"}
	eachProxyApart(t, sitetools, strings.TrimPrefix(site.URL, "http://"), func(t *testing.T, base string) {
		for _, c := range []struct {
			path        string
			header      map[string]string
			contentType string
			begins      string
		}{
			{"/llms.txt", nil, "text/plain; charset=utf-8", "# Northwind Lane Consulting\n\n> We are a small engineering consultancy"},
			{"/de/llms.txt", nil, "text/plain; charset=utf-8", "# Northwind Lane Consulting\n\n> Wir sind eine kleine Beratung"},
			{"/pricing.md", nil, "text/markdown; charset=utf-8", "# Pricing\n\nSource: <https://site.example/pricing>\n\n"},
			{"/blog/index.html.md", nil, "text/markdown; charset=utf-8", "# Blog\n\n"},
			{"/pricing", markdown, "text/markdown; charset=utf-8", "# Pricing\n\n"},
			{"/de/contact", map[string]string{"Accept": "text/markdown, text/html;q=0.9"}, "text/markdown; charset=utf-8", "# Kontakt\n\nQuelle: "},
			{"/pricing", nil, "", "GET /pricing"},
			{"/pricing", map[string]string{"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}, "", "GET /pricing"},
		} {
			checkAgentRoute(t, base, c.path, c.header, c.contentType, c.begins)
		}
	})
}

// checkAgentRoute gets path through the proxy at base: from sitetools when contentType
// is set (the file, or a page as Markdown), from the site otherwise. Either way the
// answer begins with begins, and a page's says that it varies by Accept.
func checkAgentRoute(t *testing.T, base, path string, header map[string]string, contentType, begins string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	from := "sitetools"
	if contentType == "" {
		from = "site"
	}
	if resp.StatusCode != http.StatusOK || (resp.Header.Get("X-Upstream") == "site") != (from == "site") ||
		contentType != "" && resp.Header.Get("Content-Type") != contentType || !strings.HasPrefix(string(b), begins) {
		t.Errorf("GET %s %v: %d %q from %q, want %s %q:\n%.200s", path, header, resp.StatusCode, resp.Header.Get("Content-Type"),
			resp.Header.Get("X-Upstream"), from, begins, b)
	}
	pagePath := !strings.HasSuffix(path, ".txt") && !strings.HasSuffix(path, ".md")
	if vary := strings.Join(resp.Header.Values("Vary"), ", "); pagePath && vary != "Accept" {
		t.Errorf("GET %s %v: Vary %q, want Accept", path, header, vary)
	}
}

// startIndexedSitetools runs `sitetools serve` with no pages of its own over a database
// into which `sitetools ingest` put the demo site, with https://site.example as its URL;
// its host:port.
func startIndexedSitetools(t *testing.T) string {
	t.Helper()
	bin := sitetoolsBinary(t)
	listen := testkit.FreeAddr(t)
	env := map[string]string{
		"DATABASE_URL":        pgtest.NewURL(t),
		"LISTEN_ADDR":         listen,
		"ADMIN_LISTEN_ADDR":   "off",
		"SITE_URL":            "https://site.example",
		"EMBEDDINGS_PROVIDER": "local",
		"TRUSTED_PROXIES":     "127.0.0.1/32",
	}
	testkit.Run(t, bin, env, "ingest", "--dir", filepath.Join(root(t), "deploy", "demo", "site"), "--base-url", "https://site.example")
	serve := testkit.Start(t, bin, env, "serve")
	testkit.WaitReady(t, &http.Client{Timeout: 5 * time.Second}, "http://"+listen+"/readyz", serve.Alive)
	return listen
}
