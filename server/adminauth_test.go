package server_test

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/sitetools/sitetools/internal/app"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
	"github.com/sitetools/sitetools/server"
	"github.com/sitetools/sitetools/tools/appointments"
)

// The admin tokens of the scope tests: one of every kind, and one that is none of them.
var adminTokens = map[string]string{
	"admin":    "admin-token-0123456789",
	"hook":     "hook-token-0123456789",
	"report":   "report-token-0123456789",
	"bookings": "bookings-token-0123456789",
	"wrong":    "wrong-token-0123456789",
	"none":     "",
}

// adminScopeRoute is an admin route, the scope it needs, and how to call it so that
// a token of that scope succeeds.
type adminScopeRoute struct {
	method, path string // the route as served
	scope        string // its scope: hook, report or bookings
	// request is the request to make and the status of its success; it may prepare
	// what the request needs (a booking to cancel, a job to read).
	request func(t *testing.T) (path, body string, status int)
}

func adminScopeApp(t *testing.T, env map[string]string) (http.Handler, []adminScopeRoute) {
	t.Helper()
	db := pgtest.NewDB(t)
	bookings := postgres.NewBookings(db)
	syncs := postgres.NewIndexSyncs(db)
	cfg := testConfig(t, "postgres://unused", env)
	h, err := app.Wire(cfg, app.Parts{DB: db, Bookings: bookings, Reindex: queueOnly{syncs},
		Usage: func(context.Context, int) (any, error) { return map[string]any{"ledger": []any{}}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(48 * time.Hour).Truncate(time.Hour)
	booking := `{"start": "` + start.Format(time.RFC3339) + `", "end": "` + start.Add(time.Hour).Format(time.RFC3339) + `", "title": "Call", "attendee": "Ada <ada@example.com>", "notes": ""}`
	fixed := func(path, body string, status int) func(*testing.T) (string, string, int) {
		return func(*testing.T) (string, string, int) { return path, body, status }
	}
	routes := []adminScopeRoute{
		{"GET", "/metrics", "report", fixed("/metrics", "", 200)},
		{"GET", "/admin/usage", "report", fixed("/admin/usage", "", 200)},
		{"GET", "/admin/report", "report", fixed("/admin/report?days=1", "", 200)},
		{"GET", "/admin/bookings", "bookings", fixed("/admin/bookings", "", 200)},
		{"POST", "/admin/bookings", "bookings", fixed("/admin/bookings", booking, 201)},
		{"DELETE", "/admin/bookings/:id", "bookings", func(t *testing.T) (string, string, int) {
			var nb appointments.NewBooking
			if err := json.Unmarshal([]byte(booking), &nb); err != nil {
				t.Fatal(err)
			}
			b, err := bookings.Add(context.Background(), nb, "")
			if err != nil {
				t.Fatal(err)
			}
			return "/admin/bookings/" + b.Booking.ID, "", 200
		}},
		{"POST", "/admin/reindex", "hook", fixed("/admin/reindex", `{"urls": ["/about"]}`, 202)},
		{"GET", "/admin/reindex/:id", "hook", func(t *testing.T) (string, string, int) {
			job, _, err := syncs.Submit(context.Background(), postgres.SyncRequest{URLs: []string{"https://site.example/pricing"}})
			if err != nil {
				t.Fatal(err)
			}
			return "/admin/reindex/" + job.ID, "", 200
		}},
	}
	return h.AdminHandler(), routes
}

type adminErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func adminDo(t *testing.T, h http.Handler, method, path, body, token string) (*httptest.ResponseRecorder, adminErrorBody) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var eb adminErrorBody
	if rec.Code >= 400 {
		if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil {
			t.Fatalf("%s %s: %d with a body not in the error shape: %s", method, path, rec.Code, rec.Body)
		}
	}
	return rec, eb
}

// TestAdminScopes calls every admin route with every kind of token: ADMIN_TOKEN opens
// all, a scoped token its own scope's routes and gets 403 scope_required naming the
// needed scope elsewhere, and no or an unknown token gets 401.
func TestAdminScopes(t *testing.T) {
	h, routes := adminScopeApp(t, map[string]string{
		"ADMIN_LISTEN_ADDR":    "127.0.0.1:0",
		"ADMIN_TOKEN":          adminTokens["admin"],
		"ADMIN_HOOK_TOKEN":     adminTokens["hook"],
		"ADMIN_REPORT_TOKEN":   adminTokens["report"],
		"ADMIN_BOOKINGS_TOKEN": adminTokens["bookings"],
	})

	// The table covers every route the admin listener serves: a new route cannot
	// ship without its scope being tested.
	var served []string
	for _, r := range h.(*echo.Echo).Routes() {
		if r.Method != echo.RouteNotFound {
			served = append(served, r.Method+" "+r.Path)
		}
	}
	var tested []string
	for _, r := range routes {
		tested = append(tested, r.method+" "+r.path)
	}
	if slices.Sort(served); !slices.Equal(served, slices.Sorted(slices.Values(tested))) {
		t.Fatalf("the admin listener serves %v; this test covers %v", served, tested)
	}

	variables := map[string]string{"hook": "ADMIN_HOOK_TOKEN", "report": "ADMIN_REPORT_TOKEN", "bookings": "ADMIN_BOOKINGS_TOKEN"}
	for _, r := range routes {
		for _, kind := range slices.Sorted(maps.Keys(adminTokens)) {
			t.Run(r.method+" "+r.path+" "+kind, func(t *testing.T) {
				path, body, okStatus := r.request(t)
				rec, eb := adminDo(t, h, r.method, path, body, adminTokens[kind])
				switch kind {
				case "admin", r.scope:
					if rec.Code != okStatus {
						t.Errorf("status %d, want %d: %s", rec.Code, okStatus, rec.Body)
					}
				case "wrong", "none":
					if rec.Code != 401 || eb.Error.Code != "unauthorized" || !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Bearer ") {
						t.Errorf("status %d, code %q, WWW-Authenticate %q; want 401 unauthorized with a Bearer challenge",
							rec.Code, eb.Error.Code, rec.Header().Get("WWW-Authenticate"))
					}
				default:
					want := "this route needs the " + r.scope + " scope: a token from " + variables[r.scope] + " or ADMIN_TOKEN"
					if rec.Code != 403 || eb.Error.Code != "scope_required" || eb.Error.Message != want {
						t.Errorf("status %d, error %+v; want 403 scope_required %q", rec.Code, eb.Error, want)
					}
					if c := rec.Header().Get("WWW-Authenticate"); !strings.Contains(c, `error="insufficient_scope"`) || !strings.Contains(c, `scope="`+r.scope+`"`) {
						t.Errorf("WWW-Authenticate %q, want insufficient_scope for %s", c, r.scope)
					}
				}
			})
		}
	}

	// A route that does not exist: 401 without a valid token, as every route, and
	// 404 with one of any scope (a scope is no reason to refuse a route nobody serves).
	for kind, want := range map[string]int{"none": 401, "wrong": 401, "hook": 404, "admin": 404} {
		if rec, _ := adminDo(t, h, "GET", "/admin/nothing", "", adminTokens[kind]); rec.Code != want {
			t.Errorf("GET /admin/nothing with the %s token: %d, want %d", kind, rec.Code, want)
		}
	}
	if server.Status("scope_required") != 403 {
		t.Errorf("scope_required maps to %d, want 403", server.Status("scope_required"))
	}
}

// TestAdminScopedTokensOnly: with no ADMIN_TOKEN, the scoped tokens still open their
// routes, and neither an empty bearer nor the unset ADMIN_TOKEN's empty value opens any.
func TestAdminScopedTokensOnly(t *testing.T) {
	h, _ := adminScopeApp(t, map[string]string{
		"ADMIN_LISTEN_ADDR": "127.0.0.1:0",
		"ADMIN_HOOK_TOKEN":  adminTokens["hook"],
	})
	for _, tc := range []struct {
		name, method, path, body, authorization string
		status                                  int
		code                                    string
	}{
		{"hook token reindexes", "POST", "/admin/reindex", `{"all": true}`, "Bearer " + adminTokens["hook"], 202, ""},
		{"hook token reads no metrics", "GET", "/metrics", "", "Bearer " + adminTokens["hook"], 403, "scope_required"},
		{"empty bearer", "POST", "/admin/reindex", `{"all": true}`, "Bearer ", 401, "unauthorized"},
		{"token without the scheme", "POST", "/admin/reindex", `{"all": true}`, adminTokens["hook"], 401, "unauthorized"},
		{"the former ADMIN_TOKEN", "GET", "/admin/bookings", "", "Bearer " + adminTokens["admin"], 401, "unauthorized"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			req.Header.Set("Authorization", tc.authorization)
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			var eb adminErrorBody
			_ = json.Unmarshal(rec.Body.Bytes(), &eb)
			if rec.Code != tc.status || eb.Error.Code != tc.code {
				t.Errorf("%d %q, want %d %q: %s", rec.Code, eb.Error.Code, tc.status, tc.code, rec.Body)
			}
		})
	}
}
