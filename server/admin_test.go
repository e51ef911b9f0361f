package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sitetools/sitetools/internal/app"

	"github.com/sitetools/sitetools/internal/postgres/pgtest"
)

func TestAdminUsage(t *testing.T) {
	var gotDays int
	cfg := testConfig(t, "postgres://unused", map[string]string{"ADMIN_TOKEN": "admin-token-0123456789", "ADMIN_LISTEN_ADDR": "127.0.0.1:0"})
	app, err := app.Wire(cfg, app.Parts{DB: pgtest.NewDB(t), Usage: func(_ context.Context, days int) (any, error) {
		gotDays = days
		return map[string]any{"ledger": []any{}}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		query    string
		status   int
		wantDays int
	}{{"", 200, 7}, {"?days=30", 200, 30}, {"?days=0", 400, 0}, {"?days=x", 400, 0}, {"?days=1000", 400, 0}} {
		gotDays = 0
		req := httptest.NewRequest(http.MethodGet, "/admin/usage"+tc.query, nil)
		req.Header.Set("Authorization", "Bearer admin-token-0123456789")
		rec := httptest.NewRecorder()
		app.AdminHandler().ServeHTTP(rec, req)
		if rec.Code != tc.status || gotDays != tc.wantDays || (tc.status == 200 && !strings.Contains(rec.Body.String(), `"ledger"`)) {
			t.Fatalf("%q: status %d, days %d: %s", tc.query, rec.Code, gotDays, rec.Body.String())
		}
	}
}
