package server_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
)

// TestDatabaseOutage stops the database under a running service: requests that need it
// get 503 unavailable with Retry-After (never 500), and the first request after the
// database is back succeeds, without restarting the service.
func TestDatabaseOutage(t *testing.T) {
	c := pgtest.NewCluster(t)
	url := c.URL
	ctx := context.Background()
	if _, err := postgres.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	db, err := postgres.Open(ctx, url, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	te := newEnvWithDB(t, db, url, nil)

	call := func(key string) response {
		return te.call(t, `{"name":"counter.add","arguments":{"n":1}}`, map[string]string{"Idempotency-Key": key})
	}
	if r := call("before"); r.status != http.StatusOK {
		t.Fatalf("before the outage: %d %s", r.status, r.body)
	}

	c.Stop()
	for i, check := range []func() response{
		func() response { return call("during") },
		func() response { return call("during-2") },
		func() response { return te.do(t, http.MethodGet, "/readyz", nil, nil) },
	} {
		r := check()
		if r.status != http.StatusServiceUnavailable {
			t.Fatalf("during the outage, request %d: status %d: %s", i, r.status, r.body)
		}
		if code, _, _ := r.errorBody(t); code != "unavailable" {
			t.Fatalf("code %q", code)
		}
		if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 {
			t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
		}
	}
	// Read-only tools that need no database keep working.
	if r := te.call(t, `{"name":"echo","arguments":{"text":"a"}}`, nil); r.status != http.StatusOK {
		t.Fatalf("read-only tool during the outage: %d", r.status)
	}
	// The failed call released nothing half-done: the handler never ran.
	if te.counter.Load() != 1 {
		t.Fatalf("handler ran %d times, want 1", te.counter.Load())
	}

	c.Start()
	if r := call("during"); r.status != http.StatusOK {
		t.Fatalf("first request after the outage: %d %s", r.status, r.body)
	}
	if r := te.do(t, http.MethodGet, "/readyz", nil, nil); r.status != http.StatusOK {
		t.Fatalf("readyz after the outage: %d %s", r.status, r.body)
	}
	if r := call("before"); r.status != http.StatusOK || te.counter.Load() != 2 {
		t.Fatalf("the key stored before the outage was lost: status %d, runs %d", r.status, te.counter.Load())
	}
}
