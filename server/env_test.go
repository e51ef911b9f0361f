package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sitetools/sitetools/internal/app"
	"github.com/sitetools/sitetools/internal/app/apptest"
	"github.com/sitetools/sitetools/internal/config"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
	"github.com/sitetools/sitetools/tools"
)

type testEnv struct {
	*apptest.Service
	counter *atomic.Int64 // runs of the mutating test tool
}

// testConfig is a valid configuration for tests; env overrides it.
func testConfig(t testing.TB, dbURL string, env map[string]string) config.Config {
	t.Helper()
	vars := map[string]string{"DATABASE_URL": dbURL, "SITE_URL": "https://site.example"}
	maps.Copy(vars, env)
	return apptest.Config(t, vars)
}

// newEnv starts the service with the test tools on a fresh database over real HTTP.
func newEnv(t testing.TB, env map[string]string) *testEnv {
	t.Helper()
	return newEnvWithDB(t, pgtest.NewDB(t), "postgres://unused", env)
}

func newEnvWithDB(t testing.TB, db *postgres.DB, dbURL string, env map[string]string) *testEnv {
	t.Helper()
	te := newTestEnv()
	te.serve(t, testConfig(t, dbURL, env), app.Parts{DB: db})
	return te
}

// newTestEnv is an environment not serving yet.
func newTestEnv() *testEnv { return &testEnv{Service: apptest.New(), counter: &atomic.Int64{}} }

// serve wires the service from cfg and parts, with the test tools and more, and serves
// it over real HTTP until the test ends.
func (te *testEnv) serve(t testing.TB, cfg config.Config, parts app.Parts, more ...tools.Tool) {
	t.Helper()
	parts.Register = func(r *tools.Registry) error {
		if err := registerTestTools(r, te.counter); err != nil {
			return err
		}
		return apptest.Register(more...)(r)
	}
	te.Serve(t, cfg, parts)
}

// registerTestTools adds tools that exercise every path of a call; "counter.add" is the
// test-only mutating tool.
func registerTestTools(r *tools.Registry, counter *atomic.Int64) error {
	for _, tool := range []tools.Tool{
		{
			Name:         "echo",
			Title:        "Echo",
			Description:  "Returns its text, count times.",
			InputSchema:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","maxLength":50},"count":{"type":"integer","minimum":1,"maximum":5}},"required":["text"],"additionalProperties":false}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`),
			Annotations:  tools.Annotations{ReadOnly: true, Idempotent: true},
			Handler: func(_ context.Context, args json.RawMessage) (*tools.Result, error) {
				var in struct {
					Text  string
					Count int
				}
				if err := json.Unmarshal(args, &in); err != nil {
					return nil, err
				}
				return tools.StructuredResult(map[string]string{"text": strings.Repeat(in.Text, max(in.Count, 1))})
			},
		},
		{
			Name:        "range.check",
			Description: "Fails the way a tool tells a model to fix its request.",
			InputSchema: json.RawMessage(`{"type":"object"}`),
			Annotations: tools.Annotations{ReadOnly: true},
			Handler: func(context.Context, json.RawMessage) (*tools.Result, error) {
				return tools.ErrorResult("the range ends before it starts"), nil
			},
		},
		{
			Name:        "boom",
			Description: "Panics.",
			InputSchema: json.RawMessage(`{"type":"object"}`),
			Annotations: tools.Annotations{ReadOnly: true},
			Handler:     func(context.Context, json.RawMessage) (*tools.Result, error) { panic("secret internals") },
		},
		{
			Name:        "counter.add",
			Description: "Adds n to a counter: a tool that changes state.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`),
			Annotations: tools.Annotations{},
			Handler: func(_ context.Context, args json.RawMessage) (*tools.Result, error) {
				var in struct{ N int64 }
				if err := json.Unmarshal(args, &in); err != nil {
					return nil, err
				}
				return tools.StructuredResult(map[string]int64{"total": counter.Add(in.N)})
			},
		},
	} {
		if err := r.Add(tool); err != nil {
			return err
		}
	}
	return nil
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) errorBody(t *testing.T) (code, message string, details []tools.Detail) {
	t.Helper()
	var b struct {
		Error struct {
			Code    string         `json:"code"`
			Message string         `json:"message"`
			Details []tools.Detail `json:"details"`
		} `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		t.Fatalf("error body %s: %v", r.body, err)
	}
	if b.Error.Code == "" || b.Error.Message == "" {
		t.Fatalf("error body lacks code or message: %s", r.body)
	}
	return b.Error.Code, b.Error.Message, b.Error.Details
}

func (te *testEnv) do(t *testing.T, method, path string, body io.Reader, header map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(method, te.Srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := te.Srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, b}
}

func (te *testEnv) call(t *testing.T, body string, header map[string]string) response {
	t.Helper()
	h := map[string]string{"Content-Type": "application/json"}
	for k, v := range header {
		h[k] = v
	}
	return te.do(t, http.MethodPost, "/api/chat/tools", strings.NewReader(body), h)
}
