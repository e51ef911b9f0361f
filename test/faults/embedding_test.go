package faults_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
)

// TestEmbeddingProviderFaults: with the embedding provider slow (10s per request) or
// down (500 on every request), search_site still answers within EMBEDDINGS_TIMEOUT plus
// a little, from full-text, with results and degraded "embedding_unavailable"; when
// the provider is back, searches run hybrid again without a restart.
func TestEmbeddingProviderFaults(t *testing.T) {
	const (
		timeout = time.Second     // EMBEDDINGS_TIMEOUT
		slack   = 2 * time.Second // process scheduling under a loaded test run
		workers = 4               // concurrent searches per fault
	)
	provider := llmtest.NewServer(t, 64)
	vars := serviceVars(t, pgtest.NewURL(t), false, embeddingVars(provider),
		// Each fault is met on its own, and recovery is immediate: no circuit breaker
		// (test/cluster asserts the breaker).
		map[string]string{"EMBEDDINGS_TIMEOUT": timeout.String(), "EMBEDDINGS_BREAKER_FAILURES": "0"})
	ingestDemo(t, vars)
	serveBinary(t, vars)
	base := "http://" + vars["LISTEN_ADDR"]
	client := &http.Client{}
	defer client.CloseIdleConnections()

	e := &searcher{client: client, base: base, timeout: timeout, slack: slack}
	check, search := e.check, e.search

	t.Run("healthy", func(t *testing.T) {
		check(t, search(), "")
	})

	for _, fault := range []struct {
		name  string
		set   func()
		reset func()
	}{
		{"slow 10s", func() { provider.SetDelay(10 * time.Second) }, func() { provider.SetDelay(0) }},
		{"down 500", func() { provider.SetFail(http.StatusInternalServerError) }, func() { provider.SetFail(0) }},
	} {
		t.Run(fault.name, func(t *testing.T) {
			fault.set()
			defer fault.reset()
			calls := provider.Calls()
			replies := e.concurrently(workers)
			var slowest time.Duration
			for _, r := range replies {
				check(t, r, "embedding_unavailable")
				slowest = max(slowest, r.latency)
			}
			t.Logf("%d concurrent searches degraded, the slowest after %v (EMBEDDINGS_TIMEOUT %v)", workers, slowest.Round(time.Millisecond), timeout)
			if provider.Calls() < calls+workers {
				t.Errorf("the provider got %d calls for %d new queries: the searches did not try it", provider.Calls()-calls, workers)
			}
		})
	}

	t.Run("recovered", func(t *testing.T) {
		check(t, search(), "")
	})
}

// searcher searches the service, each time with a new query, so that no cache answers it
// and every search asks the provider.
type searcher struct {
	client         *http.Client
	base           string
	timeout, slack time.Duration
	mu             sync.Mutex
	n              int
}

func (e *searcher) query(topic string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	return fmt.Sprintf("%s %d", topic, e.n)
}

func (e *searcher) search() reply {
	ctx, cancel := context.WithTimeout(context.Background(), e.timeout+e.slack+10*time.Second)
	defer cancel()
	return callTool(ctx, e.client, e.base, "search_site", map[string]any{"query": e.query("accessibility audit price")})
}

// concurrently runs n searches at once and returns their replies.
func (e *searcher) concurrently(n int) []reply {
	replies := make([]reply, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), e.timeout+e.slack+10*time.Second)
			defer cancel()
			replies[i] = callTool(ctx, e.client, e.base, "search_site", map[string]any{"query": e.query("cloud cost review")})
		})
	}
	wg.Wait()
	return replies
}

// check: a search answered, with results, degraded as wanted, and a degraded one within
// EMBEDDINGS_TIMEOUT (and some slack).
func (e *searcher) check(t *testing.T, r reply, wantDegraded string) {
	t.Helper()
	if r.err != nil || r.status != http.StatusOK {
		t.Fatalf("search: %s", r)
	}
	res, err := r.tool()
	if err != nil || res.IsError {
		t.Fatalf("search: isError or not a tool result (%v): %s", err, r)
	}
	if res.StructuredContent.Degraded != wantDegraded {
		t.Errorf("degraded %q, want %q", res.StructuredContent.Degraded, wantDegraded)
	}
	if len(res.StructuredContent.Results) == 0 {
		t.Errorf("no results: %s", r)
	}
	if wantDegraded != "" && r.latency > e.timeout+e.slack {
		t.Errorf("degraded answer after %v; EMBEDDINGS_TIMEOUT is %v", r.latency, e.timeout)
	}
}
