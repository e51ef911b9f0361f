package server_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/sitetools/sitetools/internal/app"
	"github.com/sitetools/sitetools/internal/logs"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
	"github.com/sitetools/sitetools/tools"
)

// BenchmarkCatalogHandler: GET /api/chat/tools through the whole public handler, with
// serve's logger writing nowhere, against a bare handler writing the same bytes and
// headers; to see what the middleware costs: go test -bench CatalogHandler -cpuprofile.
func BenchmarkCatalogHandler(b *testing.B) {
	a, err := app.Wire(testConfig(b, "postgres://unused", nil), app.Parts{DB: pgtest.NewDB(b), Logger: slog.New(logs.NewJSON(io.Discard, slog.LevelInfo)),
		Register: func(r *tools.Registry) error { return registerTestTools(r, &atomic.Int64{}) }})
	if err != nil {
		b.Fatal(err)
	}
	h := a.Handler()
	cat := a.Registry().Catalog()
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("ETag", cat.ETag)
		hd.Set("Cache-Control", "public, max-age=60")
		hd.Set("Vary", "Origin")
		hd.Set("Content-Type", "application/json")
		hd.Set("Content-Length", strconv.Itoa(len(cat.JSON)))
		_, _ = w.Write(cat.JSON)
	})
	req := httptest.NewRequest("GET", "/api/chat/tools", nil)
	req.Header.Set("Accept", "application/json")
	for _, c := range []struct {
		name string
		h    http.Handler
	}{{"sitetools", h}, {"bare", bare}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				w := httptest.NewRecorder()
				c.h.ServeHTTP(w, req)
			}
		})
	}
}
