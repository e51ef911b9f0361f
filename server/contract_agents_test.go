package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sitetools/sitetools/internal/postgres"
)

// llmsTxtCases are the contract's cases of /llms.txt and /{lang}/llms.txt, over an index
// of four pages in English and German that it writes to db.
func llmsTxtCases(t *testing.T, db *postgres.DB, downSrv *httptest.Server) []contractCase {
	t.Helper()
	if _, err := db.Pool.Exec(context.Background(), `INSERT INTO pages (url, path, title, lang, body, content_hash, source)
		VALUES ('https://site.example/', '/', 'Example', 'en', E'# Example\n\nAn example site for the contract test. More.', 'a', 'dir:contract'),
		       ('https://site.example/pricing', '/pricing', 'Pricing', 'en', E'# Pricing\n\nEverything costs one euro.', 'b', 'dir:contract'),
		       ('https://site.example/de/', '/de/', 'Beispiel', 'de', E'# Beispiel\n\nEine Beispielseite für den Vertragstest.', 'c', 'dir:contract'),
		       ('https://site.example/de/kontakt', '/de/kontakt', 'Kontakt', 'de', 'Schreiben Sie uns eine Nachricht.', 'd', 'dir:contract')`); err != nil {
		t.Fatal(err)
	}
	rebind := func(r *http.Request) { r.Host = "rebind.attacker.example" }
	anyETag := with(nil, "If-None-Match", "*")
	lists := func(wants ...string) func(t *testing.T, res *http.Response, body []byte) {
		return func(t *testing.T, res *http.Response, body []byte) {
			for _, w := range wants {
				if !strings.Contains(string(body), w) {
					t.Errorf("no %q in\n%s", w, body)
				}
			}
		}
	}
	return []contractCase{
		{name: "llms.txt", method: "GET", path: "/llms.txt", status: 200,
			check: lists("# Example\n\n> An example site for the contract test.\n", "\n- `test_search`: Searches the test corpus.",
				"\n- [Pricing](https://site.example/pricing.md): Everything costs one euro.\n", "\n- [Deutsch](https://site.example/de/llms.txt): Beispiel\n")},
		{name: "llms.txt not modified", method: "GET", path: "/llms.txt", header: anyETag, status: 304, check: noBody},
		{name: "llms.txt rebinding host", method: "GET", path: "/llms.txt", before: rebind, status: 403, code: "origin_not_allowed"},
		{name: "llms.txt database down", srv: downSrv, method: "GET", path: "/llms.txt", status: 503, code: "unavailable"},
		{name: "head llms.txt", method: "HEAD", path: "/llms.txt", status: 200, check: noBody},
		{name: "head llms.txt not modified", method: "HEAD", path: "/llms.txt", header: anyETag, status: 304, check: noBody},
		{name: "head llms.txt rebinding host", method: "HEAD", path: "/llms.txt", before: rebind, status: 403, check: noBody},
		{name: "a language's llms.txt", method: "GET", path: "/de/llms.txt", status: 200,
			check: lists("# Beispiel\n\n> Eine Beispielseite für den Vertragstest.\n", "\n## Seiten\n", "\n- [Kontakt](https://site.example/de/kontakt.md): Schreiben Sie uns eine Nachricht.\n",
				"\n- [English](https://site.example/llms.txt): Example\n")},
		{name: "a language's llms.txt not modified", method: "GET", path: "/de/llms.txt", header: anyETag, status: 304, check: noBody},
		{name: "no such language's llms.txt", method: "GET", path: "/fr/llms.txt", status: 404, code: "not_found"},
		{name: "a language's llms.txt rebinding host", method: "GET", path: "/de/llms.txt", before: rebind, status: 403, code: "origin_not_allowed"},
		{name: "a language's llms.txt database down", srv: downSrv, method: "GET", path: "/de/llms.txt", status: 503, code: "unavailable"},
		{name: "head a language's llms.txt", method: "HEAD", path: "/de/llms.txt", status: 200, check: noBody},
		{name: "head no such language's llms.txt", method: "HEAD", path: "/fr/llms.txt", status: 404, check: noBody},
		{name: "head a language's llms.txt rebinding host", method: "HEAD", path: "/de/llms.txt", before: rebind, status: 403, check: noBody},
	}
}
