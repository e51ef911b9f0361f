package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
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
		{name: "handover replayed", method: "POST", path: "/api/handover", header: jsonCT, body: `{"tool":"prefill_contact_form"}`, status: 204, check: noBody},
		{name: "handover after an answer", method: "POST", path: "/api/handover", header: jsonCT, body: `{"tool":"prefill_contact_form","answerId":"` + id + `"}`, status: 204, check: noBody},
		{name: "handover forged id", method: "POST", path: "/api/handover", header: jsonCT,
			body: `{"tool":"prefill_contact_form","answerId":"` + altered(id) + `"}`, status: 404, code: "unknown_answer"},
		{name: "handover id not a string", method: "POST", path: "/api/handover", header: jsonCT, body: `{"tool":"prefill_contact_form","answerId":7}`, badRequest: true, status: 400, code: "malformed_request"},
		{name: "handover database down", srv: down, method: "POST", path: "/api/handover", header: jsonCT, body: `{"tool":"prefill_contact_form"}`, status: 503, code: "unavailable",
			check: hasHeader("Retry-After", "5")},
		{name: "handover database down with an id", srv: down, method: "POST", path: "/api/handover", header: jsonCT,
			body: `{"tool":"prefill_contact_form","answerId":"` + id + `"}`, status: 503, code: "unavailable"},
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

// TestFeedbackCountsOnly: a rating counts once per answer, per day, kind, rating and
// reason; a replayed id counts nothing more, another rating replaces the first, and a
// forged or altered id counts not at all. The tables hold counts and words of their
// vocabulary only: nothing of the id but its hash, and nothing of the free text a hostile
// client sends beside it.
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
		{`{"answerId":"` + id + `","kind":"degraded","rating":"up"}`, 204}, // changed
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
	if got, want := feedbackCounts(t, db), []string{"feedback degraded/up/none 1"}; !slices.Equal(got, want) {
		t.Fatalf("activity_daily %q, want %q", got, want)
	}
	var report insights.Report
	if err := json.Unmarshal(rec.Body.Bytes(), &report); err != nil {
		t.Fatal(err)
	}
	if f := report.Feedback[2]; f.Kind != "degraded" || f.Up != 1 || f.Down != 0 || len(f.Reasons) != 0 {
		t.Fatalf("report's feedback %+v", report.Feedback)
	}
	// The answer's row: the id's SHA-256, the day and the detail; no part of the id.
	var row string
	if err := db.Pool.QueryRow(ctx, `SELECT encode(answer, 'hex') || ' ' || day || ' ' || detail FROM rated_answers`).Scan(&row); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(id))
	if want := hex.EncodeToString(sum[:]) + " " + time.Now().UTC().Format(time.DateOnly) + " degraded/up/none"; row != want {
		t.Fatalf("rated_answers %q, want %q", row, want)
	}
	for _, part := range strings.Split(id, ".")[2:] {
		if strings.Contains(row, part) || strings.Contains(row, hex.EncodeToString([]byte(part))) {
			t.Fatalf("rated_answers holds %q of the id", part)
		}
	}
}

// feedbackCounts are the rows of activity_daily, as "event detail n".
func feedbackCounts(t *testing.T, db *postgres.DB) []string {
	return textRows(t, db, `SELECT event || ' ' || detail || ' ' || n FROM activity_daily ORDER BY 1`)
}

// textRows is the one text column of query's rows on db.
func textRows(t *testing.T, db *postgres.DB, query string) []string {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), query)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// feedbackApp is a service on db and a function that sends the rating of answer id
// ("up", "down" or "down/<reason>"), returning the status.
func feedbackApp(t *testing.T, db *postgres.DB) func(id, kind, rating string) int {
	t.Helper()
	a, err := app.Wire(testConfig(t, "postgres://unused", nil), app.Parts{DB: db})
	if err != nil {
		t.Fatal(err)
	}
	h := a.Handler()
	return func(id, kind, rating string) int {
		body := map[string]string{"answerId": id, "kind": kind, "rating": rating}
		if r, reason, ok := strings.Cut(rating, "/"); ok {
			body["rating"], body["reason"] = r, reason
		}
		b, _ := json.Marshal(body)
		req := httptest.NewRequest(http.MethodPost, "/api/feedback", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
}

// TestFeedbackOncePerAnswer: each answer counts once, under its latest rating. A replay
// (the same rating again) is 204 and counts nothing; another rating is 204 and moves the
// answer's count, which other answers' counts beside it do not notice.
func TestFeedbackOncePerAnswer(t *testing.T) {
	type rating struct {
		answer int // which of the case's answers
		rating string
	}
	for _, tc := range []struct {
		name    string
		answers int
		ratings []rating
		want    []string
	}{
		{"the same rating twice", 1, []rating{{0, "up"}, {0, "up"}}, []string{"feedback model/up/none 1"}},
		{"a thumbs-down with its reason twice", 1, []rating{{0, "down/wrong"}, {0, "down/wrong"}}, []string{"feedback model/down/wrong 1"}},
		{"up, then down", 1, []rating{{0, "up"}, {0, "down/outdated"}}, []string{"feedback model/down/outdated 1"}},
		{"down, then another reason", 1, []rating{{0, "down/wrong"}, {0, "down/other"}}, []string{"feedback model/down/other 1"}},
		{"back and forth, then replayed", 1, []rating{{0, "up"}, {0, "down"}, {0, "up"}, {0, "down/unanswered"}, {0, "down/unanswered"}},
			[]string{"feedback model/down/unanswered 1"}},
		{"two answers, one changed", 2, []rating{{0, "up"}, {1, "up"}, {1, "up"}, {1, "down"}, {0, "up"}},
			[]string{"feedback model/down/none 1", "feedback model/up/none 1"}},
		{"three answers, each replayed", 3, []rating{{0, "up"}, {1, "up"}, {2, "down/wrong"}, {2, "down/wrong"}, {1, "up"}, {0, "up"}},
			[]string{"feedback model/down/wrong 1", "feedback model/up/none 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := pgtest.NewDB(t)
			send := feedbackApp(t, db)
			var ids []string
			for range tc.answers {
				id, err := insights.NewAnswerIDs(db.Pool, nil).Issue(context.Background(), insights.KindModel)
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			for i, r := range tc.ratings {
				if got := send(ids[r.answer], "model", r.rating); got != http.StatusNoContent {
					t.Fatalf("rating %d (%v): %d, want 204", i, r, got)
				}
			}
			if got := feedbackCounts(t, db); !slices.Equal(got, tc.want) {
				t.Errorf("activity_daily %q, want %q", got, tc.want)
			}
		})
	}
}

// TestFeedbackConcurrentRatings: many ratings of the same two answers at once, replays
// and changes mixed, each 204; each answer counts once, under the rating its row holds.
// Changes in opposite directions at once must not deadlock (a 500 or 503 here).
func TestFeedbackConcurrentRatings(t *testing.T) {
	db := pgtest.NewDB(t)
	send := feedbackApp(t, db)
	ids := make([]string, 2)
	for i := range ids {
		id, err := insights.NewAnswerIDs(db.Pool, nil).Issue(context.Background(), insights.KindRetrieval)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	ratings := []string{"up", "down", "down/wrong", "down/outdated"}
	var wg sync.WaitGroup
	statuses := make([]int, 64)
	for i := range statuses {
		wg.Go(func() { statuses[i] = send(ids[i%2], "retrieval", ratings[(i/2)%len(ratings)]) })
	}
	wg.Wait()
	for i, s := range statuses {
		if s != http.StatusNoContent {
			t.Errorf("rating %d: %d, want 204", i, s)
		}
	}
	want := textRows(t, db, `SELECT 'feedback ' || detail || ' ' || count(*) FROM rated_answers GROUP BY detail ORDER BY 1`)
	if len(want) == 0 {
		t.Fatal("rated_answers has no rows")
	}
	if got := feedbackCounts(t, db); !slices.Equal(got, want) {
		t.Errorf("activity_daily %q, want the rows' ratings %q", got, want)
	}
}

// TestFeedbackChangeKeepsItsDay: a rating changed on a later day moves the answer's count
// on the day it was first counted; the later day counts nothing. A count the retention
// already dropped is not started again.
func TestFeedbackChangeKeepsItsDay(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 23, 59, 0, 0, time.UTC)
	r := insights.New(db.Pool, insights.Options{Now: func() time.Time { return now }})
	days := func() []string {
		return textRows(t, db, `SELECT to_char(day, 'MM-DD') || ' ' || detail || ' ' || n FROM activity_daily ORDER BY 1`)
	}
	for _, step := range []struct {
		answer, rating, reason string
		advance                time.Duration
		want                   insights.RateOutcome
		counts                 []string
	}{
		{"a", "up", insights.ReasonNone, 0, insights.RateCounted, []string{"12-02 model/up/none 1"}},
		{"b", "up", insights.ReasonNone, 0, insights.RateCounted, []string{"12-02 model/up/none 2"}},
		{"a", "down", "wrong", 2 * time.Minute, insights.RateChanged, []string{"12-02 model/down/wrong 1", "12-02 model/up/none 1"}},
		{"a", "down", "wrong", 0, insights.RateRepeated, []string{"12-02 model/down/wrong 1", "12-02 model/up/none 1"}},
		{"c", "up", insights.ReasonNone, 0, insights.RateCounted, []string{"12-02 model/down/wrong 1", "12-02 model/up/none 1", "12-03 model/up/none 1"}},
	} {
		now = now.Add(step.advance)
		got, err := r.Rate(ctx, step.answer, insights.KindModel, step.rating, step.reason)
		if err != nil || got != step.want {
			t.Fatalf("Rate(%s, %s/%s) = %v, %v; want %v", step.answer, step.rating, step.reason, got, err, step.want)
		}
		if got := days(); !slices.Equal(got, step.counts) {
			t.Fatalf("after %s %s/%s: activity_daily %q, want %q", step.answer, step.rating, step.reason, got, step.counts)
		}
	}
	// The retention dropped 12-02's counts: a change of b moves nothing and starts nothing.
	if _, err := db.Pool.Exec(ctx, `DELETE FROM activity_daily WHERE day = '2026-12-02'`); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Rate(ctx, "b", insights.KindModel, "down", insights.ReasonNone); err != nil || got != insights.RateChanged {
		t.Fatalf("Rate(b) = %v, %v", got, err)
	}
	if got, want := days(), []string{"12-03 model/up/none 1"}; !slices.Equal(got, want) {
		t.Fatalf("activity_daily %q, want %q", got, want)
	}
}

// TestFeedbackDatabaseDown: with the database stopped, a rating is 503 unavailable with
// Retry-After in the one error shape, even once the signing key is known; once the
// database is back the same rating is taken, and counted once.
func TestFeedbackDatabaseDown(t *testing.T) {
	c := pgtest.NewCluster(t)
	ctx := context.Background()
	if _, err := postgres.Migrate(ctx, c.URL); err != nil {
		t.Fatal(err)
	}
	db, err := postgres.Open(ctx, c.URL, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	a, err := app.Wire(testConfig(t, c.URL, nil), app.Parts{DB: db})
	if err != nil {
		t.Fatal(err)
	}
	ids := insights.NewAnswerIDs(db.Pool, nil)
	first, err := ids.Issue(ctx, insights.KindModel)
	if err != nil {
		t.Fatal(err)
	}
	second, _ := ids.Issue(ctx, insights.KindModel)
	send := func(id string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/api/feedback", strings.NewReader(`{"answerId":"`+id+`","kind":"model","rating":"up"}`))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		a.Handler().ServeHTTP(rec, req)
		return rec
	}
	if rec := send(first); rec.Code != http.StatusNoContent {
		t.Fatalf("before the outage: %d %s", rec.Code, rec.Body)
	}
	c.Stop()
	rec := send(second)
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); rec.Code != http.StatusServiceUnavailable || err != nil || body.Error.Code != "unavailable" {
		t.Fatalf("during the outage: %d %s", rec.Code, rec.Body)
	}
	if s, err := strconv.Atoi(rec.Header().Get("Retry-After")); err != nil || s < 1 {
		t.Fatalf("Retry-After %q", rec.Header().Get("Retry-After"))
	}
	c.Start()
	for _, id := range []string{second, second, first} {
		if rec := send(id); rec.Code != http.StatusNoContent {
			t.Fatalf("after the outage: %d %s", rec.Code, rec.Body)
		}
	}
	if got, want := feedbackCounts(t, db), []string{"feedback model/up/none 2"}; !slices.Equal(got, want) {
		t.Fatalf("activity_daily %q, want %q", got, want)
	}
}
