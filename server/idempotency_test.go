package server_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/sitetools/sitetools/internal/postgres/pgtest"
)

func TestIdempotency(t *testing.T) {
	te := newEnv(t, nil)
	key := map[string]string{"Idempotency-Key": "3f1c2a9e-order-1"}

	first := te.call(t, `{"name":"counter.add","arguments":{"n":5}}`, key)
	if first.status != http.StatusOK || te.counter.Load() != 5 {
		t.Fatalf("first: status %d, counter %d: %s", first.status, te.counter.Load(), first.body)
	}
	// Same key, same arguments (other key order and spacing): the stored result, no second run.
	repeat := te.call(t, `{"arguments": {"n": 5}, "name": "counter.add"}`, key)
	if repeat.status != http.StatusOK || string(repeat.body) != string(first.body) || te.counter.Load() != 5 {
		t.Fatalf("repeat: status %d, counter %d: %s", repeat.status, te.counter.Load(), repeat.body)
	}
	// Same key, other arguments: 409.
	conflict := te.call(t, `{"name":"counter.add","arguments":{"n":6}}`, key)
	if conflict.status != http.StatusConflict {
		t.Fatalf("conflict: status %d: %s", conflict.status, conflict.body)
	}
	if code, _, _ := conflict.errorBody(t); code != "idempotency_conflict" || te.counter.Load() != 5 {
		t.Fatalf("conflict: code %s, counter %d", code, te.counter.Load())
	}
	// A new key runs again.
	if r := te.call(t, `{"name":"counter.add","arguments":{"n":5}}`, map[string]string{"Idempotency-Key": "another"}); r.status != 200 || te.counter.Load() != 10 {
		t.Fatalf("new key: status %d, counter %d", r.status, te.counter.Load())
	}
	// Invalid arguments do not use up the key.
	bad := map[string]string{"Idempotency-Key": "k-bad-first"}
	if r := te.call(t, `{"name":"counter.add","arguments":{"n":"x"}}`, bad); r.status != 400 {
		t.Fatalf("invalid: status %d", r.status)
	}
	if r := te.call(t, `{"name":"counter.add","arguments":{"n":1}}`, bad); r.status != 200 || te.counter.Load() != 11 {
		t.Fatalf("after invalid: status %d, counter %d: %s", r.status, te.counter.Load(), r.body)
	}
}

// TestIdempotencyAcrossReplicas runs two service instances on one database, as two
// replicas would, and fires the same keyed request at both concurrently.
func TestIdempotencyAcrossReplicas(t *testing.T) {
	db := pgtest.NewDB(t)
	a := newEnvWithDB(t, db, "postgres://unused", nil)
	b := newEnvWithDB(t, db, "postgres://unused", nil)
	const n = 20
	var wg sync.WaitGroup
	statuses := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			te := a
			if i%2 == 1 {
				te = b
			}
			statuses[i] = te.call(t, `{"name":"counter.add","arguments":{"n":1}}`, map[string]string{"Idempotency-Key": "same"}).status
		}()
	}
	wg.Wait()
	if runs := a.counter.Load() + b.counter.Load(); runs != 1 {
		t.Fatalf("the handler ran %d times, want 1 (statuses %v)", runs, statuses)
	}
	for _, s := range statuses {
		if s != http.StatusOK && s != http.StatusConflict {
			t.Fatalf("status %d among %v", s, statuses)
		}
	}
	// Once done, every replica returns the stored result.
	for _, te := range []*testEnv{a, b} {
		if r := te.call(t, `{"name":"counter.add","arguments":{"n":1}}`, map[string]string{"Idempotency-Key": "same"}); r.status != 200 {
			t.Fatalf("after: status %d: %s", r.status, r.body)
		}
	}
	if runs := a.counter.Load() + b.counter.Load(); runs != 1 {
		t.Fatalf("the handler ran %d times after completion, want 1", runs)
	}
}

// TestIdempotencyKeysAreTheClients: a key is scoped by channel and client. Another
// client using the same key neither gets the first client's stored result nor is
// blocked by it.
func TestIdempotencyKeysAreTheClients(t *testing.T) {
	te := newEnv(t, map[string]string{"TRUSTED_PROXIES": "127.0.0.1/32,::1/128"})
	from := func(client string) map[string]string {
		return map[string]string{"Idempotency-Key": "order-1", "X-Forwarded-For": client}
	}
	if r := te.call(t, `{"name":"counter.add","arguments":{"n":5}}`, from("203.0.113.1")); r.status != 200 || te.counter.Load() != 5 {
		t.Fatalf("first client: status %d, counter %d: %s", r.status, te.counter.Load(), r.body)
	}
	// Another client, the same key, other arguments: its own call, not a 409.
	if r := te.call(t, `{"name":"counter.add","arguments":{"n":2}}`, from("198.51.100.7")); r.status != 200 || te.counter.Load() != 7 {
		t.Fatalf("second client: status %d, counter %d: %s", r.status, te.counter.Load(), r.body)
	}
	// The first client's retry still gets its stored result.
	if r := te.call(t, `{"name":"counter.add","arguments":{"n":5}}`, from("203.0.113.1")); r.status != 200 || te.counter.Load() != 7 {
		t.Fatalf("retry: status %d, counter %d: %s", r.status, te.counter.Load(), r.body)
	}
}
