package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sitetools/sitetools/internal/app"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
)

// queueOnly is the publish hook's queue without a worker: jobs stay queued, so that
// coalescing is seen as it is.
type queueOnly struct{ *postgres.IndexSyncs }

func (queueOnly) Origin() string { return "https://site.example" }

func (q queueOnly) Job(ctx context.Context, id string) (postgres.IndexSync, error) {
	return q.Get(ctx, id)
}

type reindexReply struct {
	ID        string `json:"id"`
	State     string `json:"state"`
	Coalesced *bool  `json:"coalesced"`
	URLs      int    `json:"urls"`
	All       bool   `json:"all"`
	Error     struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func TestReindexHook(t *testing.T) {
	const token = "admin-token-0123456789"
	cfg := testConfig(t, "postgres://unused", map[string]string{"ADMIN_TOKEN": token, "ADMIN_LISTEN_ADDR": "127.0.0.1:0"})
	db := pgtest.NewDB(t)
	h, err := app.Wire(cfg, app.Parts{DB: db, Reindex: queueOnly{postgres.NewIndexSyncs(db)}})
	if err != nil {
		t.Fatal(err)
	}
	call := func(method, path, body string, header ...string) (int, http.Header, reindexReply) {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		rec := httptest.NewRecorder()
		h.AdminHandler().ServeHTTP(rec, req)
		var r reindexReply
		if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil {
			t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
		return rec.Code, rec.Header(), r
	}

	code, hdr, first := call("POST", "/admin/reindex", `{"urls": ["https://SITE.example:443/pricing#plans", "/about", "/about"]}`)
	if code != 202 || first.State != "queued" || first.URLs != 2 || first.Coalesced == nil || *first.Coalesced || hdr.Get("Location") != "/admin/reindex/"+first.ID {
		t.Fatalf("first hook: %d %+v, Location %q; want 202, queued, 2 URLs, not coalesced", code, first, hdr.Get("Location"))
	}
	code, _, sub := call("POST", "/admin/reindex", `{"urls": ["/pricing"]}`)
	if code != 202 || sub.ID != first.ID || !*sub.Coalesced {
		t.Errorf("hook for a page of a queued job: %d %+v; want 202 with the queued job %s, coalesced", code, sub, first.ID)
	}
	code, _, other := call("POST", "/admin/reindex", `{"urls": ["/contact"]}`)
	if code != 202 || other.ID == first.ID || *other.Coalesced {
		t.Errorf("hook for another page: %d %+v; want a job of its own", code, other)
	}
	code, _, all := call("POST", "/admin/reindex", `{"all": true}`)
	if code != 202 || !all.All || *all.Coalesced {
		t.Errorf("hook for the whole site: %d %+v; want a job of its own", code, all)
	}
	if code, _, r := call("POST", "/admin/reindex", `{"urls": ["/careers"]}`); code != 202 || r.ID != first.ID && r.ID != all.ID || !*r.Coalesced {
		t.Errorf("hook while the whole site is queued: %d %+v; want coalesced into a queued job", code, r)
	}

	code, _, keyed := call("POST", "/admin/reindex", `{"urls": ["/a", "/b"]}`, "Idempotency-Key", "publish-1")
	code2, _, again := call("POST", "/admin/reindex", `{"urls": ["/b", "/a"]}`, "Idempotency-Key", "publish-1")
	if code != 202 || code2 != 202 || again.ID != keyed.ID {
		t.Errorf("the same key and request: %d %s, then %d %s; want the same job", code, keyed.ID, code2, again.ID)
	}
	if code, _, r := call("POST", "/admin/reindex", `{"urls": ["/c"]}`, "Idempotency-Key", "publish-1"); code != 409 || r.Error.Code != "idempotency_conflict" {
		t.Errorf("the same key, another request: %d %+v; want 409 idempotency_conflict", code, r)
	}

	code, _, got := call("GET", "/admin/reindex/"+first.ID, "")
	if code != 200 || got.ID != first.ID || got.State != "queued" || got.URLs != 2 || got.Coalesced != nil {
		t.Errorf("GET the first job: %d %+v", code, got)
	}
	for _, id := range []string{"00000000-0000-0000-0000-000000000000", "not-a-uuid"} {
		if code, _, r := call("GET", "/admin/reindex/"+id, ""); code != 404 || r.Error.Code != "not_found" {
			t.Errorf("GET unknown id %s: %d %+v; want 404 not_found", id, code, r)
		}
	}

	many := make([]string, 1001)
	for i := range many {
		many[i] = fmt.Sprintf("%q", fmt.Sprintf("/p%d", i))
	}
	for body, want := range map[string]string{
		`{"urls": ["https://other.example/pricing"]}`:      "https://other.example/pricing",
		`{"urls": ["/ok", "http://site.example/pricing"]}`: "http://site.example/pricing",
		`{"urls": ["//other.example/x"]}`:                  "//other.example/x",
		`{"urls": ["ftp://site.example/x"]}`:               "ftp://site.example/x",
		`{"urls": []}`:                                     "empty",
		`{}`:                                               "empty",
		`{"urls": ["/a"], "all": true}`:                    "not both",
		`{"urls": [` + strings.Join(many, ",") + `]}`:      "at most 1000",
	} {
		if code, _, r := call("POST", "/admin/reindex", body); code != 400 || r.Error.Code != "invalid_arguments" || !strings.Contains(r.Error.Message, want) {
			t.Errorf("%.80s: %d %+v; want 400 invalid_arguments naming %q", body, code, r, want)
		}
	}
	for _, body := range []string{`{"urls": "/a"}`, `{"url": ["/a"]}`, `not json`, `{"all": true} {}`} {
		if code, _, r := call("POST", "/admin/reindex", body); code != 400 || r.Error.Code != "malformed_request" {
			t.Errorf("%s: %d %+v; want 400 malformed_request", body, code, r)
		}
	}
}

func TestReindexHookOff(t *testing.T) {
	const token = "admin-token-0123456789"
	cfg := testConfig(t, "postgres://unused", map[string]string{"ADMIN_TOKEN": token, "ADMIN_LISTEN_ADDR": "127.0.0.1:0"})
	h, err := app.Wire(cfg, app.Parts{DB: pgtest.NewDB(t)})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("POST", "/admin/reindex", strings.NewReader(`{"all": true}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.AdminHandler().ServeHTTP(rec, req)
	if rec.Code != 404 || !strings.Contains(rec.Body.String(), "INGEST_SITEMAP_URL") {
		t.Errorf("hook without a sitemap: %d %s; want 404 naming INGEST_SITEMAP_URL", rec.Code, rec.Body)
	}
}
