// Package apptest serves the service in-process over real HTTP for the tests of the
// server and of the tools: a configuration from a few variables, the wiring of
// app.Wire, a debug log into a buffer and metrics in a registry of the test's own.
package apptest

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sitetools/sitetools/internal/app"
	"github.com/sitetools/sitetools/internal/config"
	"github.com/sitetools/sitetools/internal/testkit"
	"github.com/sitetools/sitetools/server"
	"github.com/sitetools/sitetools/tools"
)

// Config is a valid configuration with the admin listener off and no rate limit
// (DATABASE_URL names no database: the tests hand the service theirs), with vars over it.
func Config(t testing.TB, vars map[string]string) config.Config {
	t.Helper()
	all := map[string]string{
		"DATABASE_URL":          "postgres://unused",
		"ADMIN_LISTEN_ADDR":     "off",
		"RATE_LIMIT_PER_MINUTE": "0",
		// Every test client is 127.0.0.1: a client's share of the caps would be every
		// test's limit. The tests of the shares set them.
		"TOOL_MAX_CONCURRENT_PER_CLIENT": "0",
		"CHAT_MAX_CONCURRENT_PER_CLIENT": "0",
		// The same for the budgets' daily shares, and pacing would make a budget test's
		// figures depend on the hour it runs at: the tests of fair use set them.
		"LLM_CLIENT_DAILY_SHARE":        "0",
		"EMBEDDINGS_CLIENT_DAILY_SHARE": "0",
		"BUDGET_PACING":                 "off",
	}
	for k, v := range vars {
		all[k] = v
	}
	cfg, err := config.Load(func(k string) string { return all[k] })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

// Service is the service under test: what it logs, its metrics, and its listeners.
type Service struct {
	Logs    *testkit.Buffer      // every line Log wrote, JSON
	Log     *slog.Logger         // at debug level
	Metrics *prometheus.Registry // the edge's and the budgets' metrics
	App     *server.App
	Srv     *httptest.Server // the public listener
	Admin   *httptest.Server // the admin listener; nil while ADMIN_LISTEN_ADDR is off
}

// New returns a service not yet serving, for parts that need its log or metrics first.
func New() *Service {
	s := &Service{Logs: &testkit.Buffer{}, Metrics: prometheus.NewRegistry()}
	s.Log = slog.New(slog.NewJSONHandler(s.Logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return s
}

// Serve wires cfg and parts (its log and metrics, unless parts has its own) and serves
// them over real HTTP until the test ends.
func (s *Service) Serve(t testing.TB, cfg config.Config, parts app.Parts) *Service {
	t.Helper()
	if parts.Logger == nil {
		parts.Logger = s.Log
	}
	if parts.Metrics == nil {
		parts.Metrics = s.Metrics
	}
	a, err := app.Wire(cfg, parts)
	if err != nil {
		t.Fatalf("app.Wire: %v", err)
	}
	s.App = a
	s.Srv = httptest.NewServer(a.Handler())
	t.Cleanup(s.Srv.Close)
	if cfg.AdminListenAddr != "" {
		s.Admin = httptest.NewServer(a.AdminHandler())
		t.Cleanup(s.Admin.Close)
	}
	return s
}

// Register is a Parts.Register that adds ts.
func Register(ts ...tools.Tool) func(*tools.Registry) error {
	return func(r *tools.Registry) error {
		for _, tool := range ts {
			if err := r.Add(tool); err != nil {
				return err
			}
		}
		return nil
	}
}

// Call calls the tool name with args over POST /api/chat/tools: the status and the body.
// A call that gets no whole answer marks the test failed and returns status 0; it does
// not stop the test, so any goroutine may call.
func (s *Service) Call(t testing.TB, name string, args any) (int, []byte) {
	t.Helper()
	req, err := json.Marshal(map[string]any{"name": name, "arguments": args})
	if err != nil {
		t.Errorf("arguments: %v", err)
		return 0, nil
	}
	resp, err := http.Post(s.Srv.URL+"/api/chat/tools", "application/json", bytes.NewReader(req))
	if err != nil {
		t.Errorf("POST /api/chat/tools: %v", err)
		return 0, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Errorf("POST /api/chat/tools: %v", err)
		return 0, nil
	}
	return resp.StatusCode, body
}

// MetricsText is the metrics as GET /metrics shows them.
func (s *Service) MetricsText(t testing.TB) string {
	t.Helper()
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(s.Metrics, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("metrics: status %d", rec.Code)
	}
	return rec.Body.String()
}
