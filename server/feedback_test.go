package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sitetools/sitetools/internal/app"
	"github.com/sitetools/sitetools/internal/insights"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
)

// feedbackCases are the contract's cases of POST /api/feedback and /api/handover: every
// documented status and the other methods. limited is a server whose rate limit is
// spent; down one whose database is unreachable.
func feedbackCases(t *testing.T, db *postgres.DB, limited, down *httptest.Server) []contractCase {
	t.Helper()
	id, err := insights.NewAnswerIDs(db.Pool, nil).Issue(context.Background(), insights.KindModel)
	if err != nil {
		t.Fatal(err)
	}
	jsonCT := http.Header{"Content-Type": {"application/json"}}
	rating := func(id, kind, rating, reason string) string {
		b := `{"answerId":"` + id + `","kind":"` + kind + `","rating":"` + rating + `"`
		if reason != "" {
			b += `,"reason":"` + reason + `"`
		}
		return b + "}"
	}
	allowPost := hasHeader("Allow", "POST")
	cases := []contractCase{
		{name: "feedback up", method: "POST", path: "/api/feedback", header: jsonCT, body: rating(id, "model", "up", ""), status: 204, check: noBody},
		{name: "feedback down with a reason", method: "POST", path: "/api/feedback", header: jsonCT, body: rating(id, "model", "down", "outdated"), status: 204},
		{name: "feedback forged id", method: "POST", path: "/api/feedback", header: jsonCT,
			body: rating(altered(id), "model", "down", ""), status: 404, code: "unknown_answer"},
		{name: "feedback another kind than the id's", method: "POST", path: "/api/feedback", header: jsonCT,
			body: rating(id, "retrieval", "up", ""), status: 400, code: "malformed_request", check: details("/kind")},
		{name: "feedback reason with up", method: "POST", path: "/api/feedback", header: jsonCT,
			body: rating(id, "model", "up", "wrong"), badRequest: true, status: 400, code: "malformed_request", check: details("/reason")},
		{name: "feedback unknown values", method: "POST", path: "/api/feedback", header: jsonCT,
			body: rating(id, "great", "sideways", "boring"), badRequest: true, status: 400, code: "malformed_request", check: details("/kind", "/rating", "/reason")},
		{name: "feedback free text", method: "POST", path: "/api/feedback", header: jsonCT,
			body: `{"answerId":"` + id + `","kind":"model","rating":"down","comment":"the prices are wrong"}`, badRequest: true, status: 400, code: "malformed_request"},
		{name: "feedback field spelt otherwise", method: "POST", path: "/api/feedback", header: jsonCT,
			body: `{"answerId":"` + id + `","kind":"model","RATING":"down"}`, badRequest: true, status: 400, code: "malformed_request"},
		{name: "feedback missing fields", method: "POST", path: "/api/feedback", header: jsonCT, body: `{}`, badRequest: true, status: 400, code: "malformed_request",
			check: details("/answerId", "/kind", "/rating")},
		{name: "feedback wrong types", method: "POST", path: "/api/feedback", header: jsonCT, body: `{"answerId":1,"kind":"model","rating":"up"}`, badRequest: true, status: 400, code: "malformed_request"},
		{name: "feedback not JSON", method: "POST", path: "/api/feedback", header: jsonCT, body: `rating=up`, badRequest: true, status: 400, code: "malformed_request"},
		{name: "feedback two objects", method: "POST", path: "/api/feedback", header: jsonCT, body: rating(id, "model", "up", "") + "{}", status: 400, code: "malformed_request"},
		{name: "feedback too large", method: "POST", path: "/api/feedback", header: jsonCT, body: rating(strings.Repeat("x", 2000), "model", "up", ""), badRequest: true, status: 413, code: "body_too_large"},
		{name: "feedback not JSON content type", method: "POST", path: "/api/feedback", header: http.Header{"Content-Type": {"text/plain"}}, body: rating(id, "model", "up", ""), badRequest: true, status: 415, code: "unsupported_media_type"},
		{name: "feedback from a disallowed origin", method: "POST", path: "/api/feedback", header: with(jsonCT, "Origin", evilOrigin), body: rating(id, "model", "up", ""), status: 403, code: "origin_not_allowed"},
		{name: "feedback rate limited", srv: limited, method: "POST", path: "/api/feedback", header: jsonCT, body: rating(id, "model", "up", ""), status: 429, code: "rate_limited"},
		{name: "feedback database down", srv: down, method: "POST", path: "/api/feedback", header: jsonCT, body: rating(id, "model", "up", ""), status: 503, code: "unavailable"},
		{name: "feedback get", method: "GET", path: "/api/feedback", status: 405, code: "method_not_allowed", check: allowPost},
		{name: "feedback put", method: "PUT", path: "/api/feedback", status: 405, code: "method_not_allowed", check: allowPost},
		{name: "feedback patch", method: "PATCH", path: "/api/feedback", status: 405, code: "method_not_allowed", check: allowPost},
		{name: "feedback delete", method: "DELETE", path: "/api/feedback", status: 405, code: "method_not_allowed", check: allowPost},
		{name: "feedback head", method: "HEAD", path: "/api/feedback", status: 405, check: noBody},
		{name: "feedback options without preflight", method: "OPTIONS", path: "/api/feedback", status: 405, code: "method_not_allowed", check: allowPost},
		preflight("feedback ", "/api/feedback", partnerOrigin, "content-type", "content-type"),

		{name: "handover", method: "POST", path: "/api/handover", header: jsonCT, body: `{"tool":"prefill_contact_form"}`, status: 204, check: noBody},
		{name: "handover another tool", method: "POST", path: "/api/handover", header: jsonCT, body: `{"tool":"open_page"}`, badRequest: true, status: 400, code: "malformed_request", check: details("/tool")},
		{name: "handover with the form's fields", method: "POST", path: "/api/handover", header: jsonCT, body: `{"tool":"prefill_contact_form","name":"Ada"}`, badRequest: true, status: 400, code: "malformed_request"},
		{name: "handover too large", method: "POST", path: "/api/handover", header: jsonCT, body: `{"tool":"` + strings.Repeat("x", 2000) + `"}`, badRequest: true, status: 413, code: "body_too_large"},
		{name: "handover not JSON content type", method: "POST", path: "/api/handover", header: http.Header{"Content-Type": {"text/plain"}}, body: `{"tool":"prefill_contact_form"}`, badRequest: true, status: 415, code: "unsupported_media_type"},
		{name: "handover from a disallowed origin", method: "POST", path: "/api/handover", header: with(jsonCT, "Origin", evilOrigin), body: `{"tool":"prefill_contact_form"}`, status: 403, code: "origin_not_allowed"},
		{name: "handover rate limited", srv: limited, method: "POST", path: "/api/handover", header: jsonCT, body: `{"tool":"prefill_contact_form"}`, status: 429, code: "rate_limited"},
		{name: "handover get", method: "GET", path: "/api/handover", status: 405, code: "method_not_allowed", check: allowPost},
		{name: "handover put", method: "PUT", path: "/api/handover", status: 405, code: "method_not_allowed", check: allowPost},
		{name: "handover patch", method: "PATCH", path: "/api/handover", status: 405, code: "method_not_allowed", check: allowPost},
		{name: "handover delete", method: "DELETE", path: "/api/handover", status: 405, code: "method_not_allowed", check: allowPost},
		{name: "handover head", method: "HEAD", path: "/api/handover", status: 405, check: noBody},
		{name: "handover options without preflight", method: "OPTIONS", path: "/api/handover", status: 405, code: "method_not_allowed", check: allowPost},
		preflight("handover ", "/api/handover", partnerOrigin, "content-type", "content-type"),
	}
	return cases
}

// altered is id with its last character changed: the signature no longer holds.
func altered(id string) string {
	last := id[len(id)-1]
	if last == 'A' {
		return id[:len(id)-1] + "B"
	}
	return id[:len(id)-1] + "A"
}

// TestAnswerIDs: an id names its kind; a forged, altered, truncated or week-old id is not
// an answer of this site; ids are new every time.
func TestAnswerIDs(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	ids := insights.NewAnswerIDs(db.Pool, clock)
	a, err := ids.Issue(ctx, insights.KindDegraded)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ids.Issue(ctx, insights.KindDegraded)
	if a == b || !answerIDRE.MatchString(a) || len(a) > 128 {
		t.Fatalf("ids %q and %q", a, b)
	}
	if kind, err := ids.Check(ctx, a); err != nil || kind != insights.KindDegraded {
		t.Fatalf("Check(%q) = %q, %v", a, kind, err)
	}
	// Another key (another site's database) did not issue it.
	other := pgtest.NewDB(t)
	if _, err := other.Pool.Exec(ctx, `UPDATE instance_keys SET key = decode(repeat('ab', 32), 'hex')`); err != nil {
		t.Fatal(err)
	}
	if _, err := insights.NewAnswerIDs(other.Pool, clock).Check(ctx, a); err != insights.ErrUnknownAnswer {
		t.Fatalf("another site's key: %v", err)
	}
	for _, forged := range []string{"", ".", "x", a[:len(a)-1], altered(a), strings.Replace(a, ".d.", ".m.", 1), "20261202.m.AAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA", a + "x"} {
		if _, err := ids.Check(ctx, forged); err != insights.ErrUnknownAnswer {
			t.Errorf("Check(%q): %v, want ErrUnknownAnswer", forged, err)
		}
	}
	now = now.Add(insights.AnswerIDMaxAge)
	if _, err := ids.Check(ctx, a); err != nil {
		t.Errorf("7 days later: %v", err)
	}
	now = now.Add(48 * time.Hour)
	if _, err := ids.Check(ctx, a); err != insights.ErrUnknownAnswer {
		t.Errorf("9 days later: %v, want ErrUnknownAnswer", err)
	}
}

// TestFeedbackCountsOnly: a rating counts once per request, per day, kind, rating and
// reason; a replayed id counts again (within the rate limit) and a forged or altered one
// not at all. The tables hold counts and words of their vocabulary only: nothing of the
// id, and nothing of the free text a hostile client sends beside it.
func TestFeedbackCountsOnly(t *testing.T) {
	db := pgtest.NewDB(t)
	cfg := testConfig(t, "postgres://unused", map[string]string{"ADMIN_TOKEN": "admin-token-0123456789", "ADMIN_LISTEN_ADDR": "127.0.0.1:0"})
	a, err := app.Wire(cfg, app.Parts{DB: db})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id, err := insights.NewAnswerIDs(db.Pool, nil).Issue(ctx, insights.KindDegraded)
	if err != nil {
		t.Fatal(err)
	}
	send := func(body string) int {
		req := httptest.NewRequest(http.MethodPost, "/api/feedback", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		a.Handler().ServeHTTP(rec, req)
		return rec.Code
	}
	down := `{"answerId":"` + id + `","kind":"degraded","rating":"down","reason":"wrong"}`
	for i, s := range []struct {
		body string
		want int
	}{
		{down, 204}, {down, 204}, {down, 204}, // replayed
		{`{"answerId":"` + id + `","kind":"degraded","rating":"up"}`, 204},
		{`{"answerId":"` + altered(id) + `","kind":"degraded","rating":"down","reason":"wrong"}`, 404},
		{`{"answerId":"` + strings.Replace(id, ".d.", ".m.", 1) + `","kind":"model","rating":"up"}`, 404},
		{`{"answerId":"` + id + `","kind":"model","rating":"up"}`, 400},
		{`{"answerId":"` + id + `","kind":"degraded","rating":"down","reason":"wrong","text":"free text"}`, 400},
		{`{"answerId":"` + id + `","kind":"degraded","rating":"down","reason":"free text"}`, 400},
	} {
		if got := send(s.body); got != s.want {
			t.Fatalf("request %d %s: %d, want %d", i, s.body, got, s.want)
		}
	}
	req := httptest.NewRequest(http.MethodGet, "/admin/report?days=1", nil)
	req.Header.Set("Authorization", "Bearer admin-token-0123456789")
	rec := httptest.NewRecorder()
	a.AdminHandler().ServeHTTP(rec, req) // writes the counts first
	if rec.Code != 200 {
		t.Fatalf("report: %d %s", rec.Code, rec.Body)
	}
	rows, err := db.Pool.Query(ctx, `SELECT event || ' ' || detail || ' ' || n FROM activity_daily ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"feedback degraded/down/wrong 3", "feedback degraded/up/none 1"}
	if !slices.Equal(got, want) {
		t.Fatalf("activity_daily %q, want %q", got, want)
	}
	var report insights.Report
	if err := json.Unmarshal(rec.Body.Bytes(), &report); err != nil {
		t.Fatal(err)
	}
	if f := report.Feedback[2]; f.Kind != "degraded" || f.Up != 1 || f.Down != 3 || f.Reasons["wrong"] != 3 {
		t.Fatalf("report's feedback %+v", report.Feedback)
	}
}
