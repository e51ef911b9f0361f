package appointments_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/app"
	"github.com/sitetools/sitetools/internal/app/apptest"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
	"github.com/sitetools/sitetools/tools/appointments"
)

// Monday 30 November 2026, 08:00 in Berlin.
var now = time.Date(2026, 11, 30, 8, 0, 0, 0, mustZone("Europe/Berlin"))

func mustZone(name string) *time.Location {
	l, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return l
}

type env struct {
	*apptest.Service
	bookings *postgres.Bookings
	output   json.RawMessage // the tool's output schema
}

type failingSource struct{ err error }

func (f failingSource) Busy(context.Context, time.Time, time.Time, *time.Location) ([]appointments.Interval, error) {
	return nil, f.err
}

func newEnv(t *testing.T, extra ...appointments.BusySource) *env {
	t.Helper()
	db := pgtest.NewDB(t)
	f, err := os.Open("testdata/availability.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sched, err := appointments.LoadSchedule(f)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{bookings: postgres.NewBookings(db)}
	avail := &appointments.Availability{Schedule: sched, Sources: append([]appointments.BusySource{e.bookings}, extra...), Now: func() time.Time { return now }}
	tool, err := avail.Tool()
	if err != nil {
		t.Fatal(err)
	}
	e.output = tool.OutputSchema
	cfg := apptest.Config(t, map[string]string{"ADMIN_LISTEN_ADDR": "127.0.0.1:0", "ADMIN_TOKEN": "admin-token-0123456789"})
	e.Service = apptest.New().Serve(t, cfg, app.Parts{DB: db, Bookings: e.bookings, Register: apptest.Register(tool)})
	return e
}

type callResult struct {
	status  int
	body    string
	isError bool
	out     appointments.Output
	text    string
}

func (e *env) slots(t *testing.T, args map[string]any) callResult {
	t.Helper()
	status, body := e.Call(t, "get_free_slots", args)
	var r struct {
		Content           []struct{ Text string }
		StructuredContent appointments.Output
		IsError           bool
	}
	_ = json.Unmarshal(body, &r)
	res := callResult{status: status, body: string(body), isError: r.IsError, out: r.StructuredContent}
	if len(r.Content) > 0 {
		res.text = r.Content[0].Text
	}
	return res
}

func (e *env) adminDo(t *testing.T, method, path, body string, header map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, e.Admin.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer admin-token-0123456789")
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestBookingsNeverLeave books appointments whose every field is a unique marker and
// checks that no marker reaches the tool's answer, a log line or a metric, and that the
// answer has no key its output schema does not declare.
func TestBookingsNeverLeave(t *testing.T) {
	e := newEnv(t)
	var markers []string
	for i, start := range []string{"2026-12-01T10:00:00+01:00", "2026-12-02T09:00:00+01:00", "2026-12-03T14:00:00+01:00"} {
		title, attendee, notes := "MKtitle"+string(rune('A'+i)), "mk-attendee-"+string(rune('a'+i))+"@example.com", "MKnotes"+string(rune('A'+i))
		s, _ := time.Parse(time.RFC3339, start)
		body, _ := json.Marshal(map[string]any{"start": s, "end": s.Add(time.Hour), "title": title, "attendee": attendee, "notes": notes})
		status, resp := e.adminDo(t, "POST", "/admin/bookings", string(body), map[string]string{"Idempotency-Key": "MKkey" + string(rune('A'+i))})
		if status != http.StatusCreated {
			t.Fatalf("create: %d %s", status, resp)
		}
		var c appointments.Created
		_ = json.Unmarshal([]byte(resp), &c)
		markers = append(markers, title, attendee, notes, c.Booking.ID, "MKkey"+string(rune('A'+i)))
	}
	r := e.slots(t, map[string]any{"from": "2026-12-01", "to": "2026-12-04"})
	if r.status != 200 || r.isError || len(r.out.Slots) == 0 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	// The booked hour and its buffers are not free.
	for _, s := range r.out.Slots {
		st, _ := time.Parse(time.RFC3339, s.Start)
		en, _ := time.Parse(time.RFC3339, s.End)
		booked, _ := time.Parse(time.RFC3339, "2026-12-01T10:00:00+01:00")
		if st.Before(booked.Add(time.Hour+10*time.Minute)) && en.After(booked.Add(-10*time.Minute)) {
			t.Fatalf("slot %v overlaps a booking or its buffer", s)
		}
	}
	metrics := e.MetricsText(t)
	for _, m := range markers {
		for where, text := range map[string]string{"response": r.body, "logs": e.Logs.String(), "metrics": metrics} {
			if strings.Contains(text, m) {
				t.Errorf("%s contains %q", where, m)
			}
		}
	}
	assertDeclaredKeys(t, e.output, r.body)
}

// assertDeclaredKeys checks that every key of structuredContent is declared in schema.
func assertDeclaredKeys(t *testing.T, schema json.RawMessage, body string) {
	t.Helper()
	var s struct {
		Properties map[string]struct {
			Items struct {
				Properties map[string]any `json:"properties"`
			} `json:"items"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		t.Fatal(err)
	}
	var resp struct {
		StructuredContent map[string]json.RawMessage `json:"structuredContent"`
	}
	_ = json.Unmarshal([]byte(body), &resp)
	for k, v := range resp.StructuredContent {
		p, ok := s.Properties[k]
		if !ok {
			t.Errorf("undeclared key %q", k)
			continue
		}
		var items []map[string]any
		if json.Unmarshal(v, &items) == nil {
			for _, it := range items {
				for ik := range it {
					if _, ok := p.Items.Properties[ik]; !ok {
						t.Errorf("undeclared key %s.%s", k, ik)
					}
				}
			}
		}
	}
}

func TestBadArguments(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name       string
		args       map[string]any
		wantStatus int
		wantText   string // for isError results
	}{
		{"reversed range", map[string]any{"from": "2026-12-10", "to": "2026-12-01"}, 200, "ends before it starts"},
		{"400-day range", map[string]any{"from": "2026-12-01", "to": "2028-01-05"}, 200, "at most 31 days"},
		{"duration 7", map[string]any{"from": "2026-12-01", "to": "2026-12-02", "durationMinutes": 7}, 400, ""},
		{"duration beyond a working day", map[string]any{"from": "2026-12-01", "to": "2026-12-02", "durationMinutes": 900}, 400, ""},
		{"Mars/Olympus", map[string]any{"from": "2026-12-01", "to": "2026-12-02", "timezone": "Mars/Olympus"}, 200, "IANA"},
		{"Local is not a zone", map[string]any{"from": "2026-12-01", "to": "2026-12-02", "timezone": "Local"}, 200, "IANA"},
		{"1900", map[string]any{"from": "1900-01-01", "to": "1900-01-05"}, 200, "in the past"},
		{"beyond the horizon", map[string]any{"from": "2027-06-01", "to": "2027-06-05"}, 200, "days ahead"},
		{"not a date", map[string]any{"from": "next tuesday", "to": "2026-12-02"}, 400, ""},
		{"month 13", map[string]any{"from": "2026-13-01", "to": "2026-12-02"}, 400, ""},
		{"number", map[string]any{"from": 20261201, "to": "2026-12-02"}, 400, ""},
		{"missing to", map[string]any{"from": "2026-12-01"}, 400, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.slots(t, tc.args)
			if r.status != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", r.status, tc.wantStatus, r.body)
			}
			if tc.wantStatus == 200 && (!r.isError || !strings.Contains(r.text, tc.wantText)) {
				t.Fatalf("want an isError result saying %q: %s", tc.wantText, r.body)
			}
			if tc.wantStatus == 400 && !strings.Contains(r.body, `"code":"invalid_arguments"`) {
				t.Fatalf("want invalid_arguments: %s", r.body)
			}
		})
	}
}

func TestTimezoneAndDates(t *testing.T) {
	e := newEnv(t)
	r := e.slots(t, map[string]any{"from": "2026-12-01", "to": "2026-12-01", "timezone": "America/New_York", "durationMinutes": 60})
	if r.status != 200 || r.isError || r.out.Timezone != "America/New_York" || len(r.out.Slots) == 0 {
		t.Fatalf("%s", r.body)
	}
	for _, s := range r.out.Slots {
		st, err := time.Parse(time.RFC3339, s.Start)
		en, _ := time.Parse(time.RFC3339, s.End)
		if err != nil || !strings.HasSuffix(s.Start, "-05:00") || en.Sub(st) != time.Hour {
			t.Fatalf("slot %v", s)
		}
	}
}

func TestFailsClosed(t *testing.T) {
	e := newEnv(t, failingSource{appointments.ErrAvailabilityUnknown})
	r := e.slots(t, map[string]any{"from": "2026-12-01", "to": "2026-12-02"})
	if r.status != 200 || !r.isError || len(r.out.Slots) != 0 || !strings.Contains(r.text, "temporarily unknown") {
		t.Fatalf("%s", r.body)
	}
}

func TestAdminBookings(t *testing.T) {
	e := newEnv(t)
	body := `{"start":"2026-12-01T10:00:00+01:00","end":"2026-12-01T11:00:00+01:00","title":"Intro call"}`
	key := map[string]string{"Idempotency-Key": "k1"}
	status, first := e.adminDo(t, "POST", "/admin/bookings", body, key)
	if status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, first)
	}
	status, again := e.adminDo(t, "POST", "/admin/bookings", body, key)
	var a, b appointments.Created
	_ = json.Unmarshal([]byte(first), &a)
	_ = json.Unmarshal([]byte(again), &b)
	if status != http.StatusOK || !b.Replayed || b.Booking.ID != a.Booking.ID {
		t.Fatalf("repeat: %d %s", status, again)
	}
	if status, resp := e.adminDo(t, "POST", "/admin/bookings", strings.Replace(body, "Intro", "Other", 1), key); status != http.StatusConflict {
		t.Fatalf("same key, other booking: %d %s", status, resp)
	}
	// Overlapping bookings are allowed and reported.
	status, resp := e.adminDo(t, "POST", "/admin/bookings", `{"start":"2026-12-01T10:30:00+01:00","end":"2026-12-01T11:30:00+01:00"}`, nil)
	var c appointments.Created
	_ = json.Unmarshal([]byte(resp), &c)
	if status != http.StatusCreated || len(c.Overlaps) != 1 || c.Overlaps[0] != a.Booking.ID {
		t.Fatalf("overlap: %d %s", status, resp)
	}
	for _, bad := range []string{`{"start":"2026-12-01T11:00:00+01:00","end":"2026-12-01T10:00:00+01:00"}`, `{"start":"x"}`, `{"start":"2026-12-01T10:00:00Z","end":"2026-12-01T11:00:00Z","room":"1"}`, `[]`} {
		if status, resp := e.adminDo(t, "POST", "/admin/bookings", bad, nil); status != http.StatusBadRequest {
			t.Fatalf("%s: %d %s", bad, status, resp)
		}
	}
	status, resp = e.adminDo(t, "GET", "/admin/bookings?from=2026-12-01T00:00:00Z&to=2026-12-02T00:00:00Z", "", nil)
	if status != 200 || strings.Count(resp, `"id"`) != 2 {
		t.Fatalf("list: %d %s", status, resp)
	}
	if status, resp := e.adminDo(t, "DELETE", "/admin/bookings/"+a.Booking.ID, "", nil); status != 200 || !strings.Contains(resp, "cancelledAt") {
		t.Fatalf("cancel: %d %s", status, resp)
	}
	for _, id := range []string{"not-a-uuid", "00000000-0000-0000-0000-000000000000"} {
		if status, _ := e.adminDo(t, "DELETE", "/admin/bookings/"+id, "", nil); status != http.StatusNotFound {
			t.Fatalf("cancel %s: %d", id, status)
		}
	}
	// The cancelled booking frees its time again.
	r := e.slots(t, map[string]any{"from": "2026-12-01T09:00:00+01:00", "to": "2026-12-01T10:30:00+01:00"})
	if len(r.out.Slots) == 0 {
		t.Fatalf("no slots after cancelling: %s", r.body)
	}
	req, _ := http.NewRequest("GET", e.Admin.URL+"/admin/bookings", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %v %v", resp.StatusCode, err)
	}
}
