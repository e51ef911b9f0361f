package embedcache_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sitetools/sitetools/internal/budget"
	"github.com/sitetools/sitetools/internal/embedcache"
	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
	"github.com/sitetools/sitetools/internal/testkit"
)

func TestCacheKeyIgnoresCaseSpacingAndPunctuation(t *testing.T) {
	a := embedcache.CacheKey("m", 64, "", "  How do I book a call?  ")
	for _, q := range []string{"how do i book a call", "HOW  DO I\tBOOK A CALL!", "How do I book a call?"} {
		if embedcache.CacheKey("m", 64, "", q) != a {
			t.Fatalf("%q keys differently", q)
		}
	}
	if embedcache.CacheKey("other-model", 64, "", "how do i book a call") == a || embedcache.CacheKey("m", 64, "", "how do i book a meeting") == a ||
		embedcache.CacheKey("m", 32, "", "how do i book a call") == a || embedcache.CacheKey("m", 64, "query: ", "how do i book a call") == a {
		t.Fatal("different model, dimension, prefix or query, same key")
	}
}

// TestCacheHitMarksUse: a hit in the shared cache marks the row used, so that retention
// (EMBEDDING_CACHE_TTL_DAYS) keeps the queries people still ask; a row used today is not
// written again.
func TestCacheHitMarksUse(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	emb, err := llm.NewLocal(16)
	if err != nil {
		t.Fatal(err)
	}
	newEmbedder := func() *embedcache.QueryEmbedder {
		q, err := embedcache.NewQueryEmbedder(embedcache.QueryEmbedderOptions{
			Pool: db.Pool, Embedder: emb, Budget: budget.NewBudget(db.Pool, "embedding", 0, nil), Ledger: budget.NewLedger(db.Pool),
		})
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	if _, _, err := newEmbedder().EmbedQuery(ctx, "search_site", "opening hours"); err != nil {
		t.Fatal(err)
	}
	ageDays := func() float64 {
		var days float64
		if err := db.Pool.QueryRow(ctx, `SELECT extract(epoch FROM now() - used_at) / 86400 FROM embedding_cache`).Scan(&days); err != nil {
			t.Fatal(err)
		}
		return days
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE embedding_cache SET used_at = now() - interval '20 days'`); err != nil {
		t.Fatal(err)
	}
	// A new process (an empty memory cache) finds the row and marks it.
	if _, _, err := newEmbedder().EmbedQuery(ctx, "search_site", "Opening hours?"); err != nil {
		t.Fatal(err)
	}
	if d := ageDays(); d > 0.01 {
		t.Errorf("used %.2f days ago after a hit; want now", d)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE embedding_cache SET used_at = now() - interval '2 hours'`); err != nil {
		t.Fatal(err)
	}
	if _, _, err := newEmbedder().EmbedQuery(ctx, "search_site", "opening hours"); err != nil {
		t.Fatal(err)
	}
	if d := ageDays(); d < 0.08 {
		t.Errorf("a row used 2 hours ago was written again on a hit (now %.3f days)", d)
	}
}

// newProviderEmbedder returns a QueryEmbedder on db in front of a fake provider, as one
// replica builds it: its own memory cache and single-flight, the shared database.
func newProviderEmbedder(t *testing.T, db *pgxpool.Pool, p *llmtest.Server, b *budget.Budget, timeout time.Duration) *embedcache.QueryEmbedder {
	t.Helper()
	emb, err := llm.NewOpenAI(llm.OpenAIOptions{BaseURL: p.BaseURL(), Model: "fake-embedding", Dimensions: 16, Timeout: 2 * timeout, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	q, err := embedcache.NewQueryEmbedder(embedcache.QueryEmbedderOptions{
		Pool: db, Embedder: emb, Budget: b, Ledger: budget.NewLedger(db), Timeout: timeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// An identical new query arriving at once on three replicas costs one provider call: one
// claims it, the others wait for the shared cache.
func TestSingleFlightAcrossReplicas(t *testing.T) {
	db := pgtest.NewDB(t)
	p := llmtest.NewServer(t, 16)
	p.SetDelay(200 * time.Millisecond)
	var replicas []*embedcache.QueryEmbedder
	for range 3 {
		replicas = append(replicas, newProviderEmbedder(t, db.Pool, p, budget.NewBudget(db.Pool, "embedding", 0, nil), 5*time.Second))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := 0
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, degraded, err := replicas[i%3].EmbedQuery(context.Background(), "search_site", "What does an accessibility audit cost?")
			if err != nil || degraded != "" || len(v) != 16 {
				t.Errorf("replica %d: %d dims, degraded %q, %v", i%3, len(v), degraded, err)
				return
			}
			mu.Lock()
			got++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if p.Calls() != 1 || got != 12 {
		t.Fatalf("12 identical queries over 3 replicas: %d provider calls, %d vectors; want 1 and 12", p.Calls(), got)
	}
}

// A request that may have reached the provider unanswered is charged at its reservation;
// an answer after the search stopped waiting is settled at the provider's count and
// cached, so that the same query costs nothing next time.
func TestUnknownDeliveryIsSpentAndLateAnswersSettle(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	p := llmtest.NewServer(t, 16)
	b := budget.NewBudget(db.Pool, "embedding", 10_000, nil)
	q := newProviderEmbedder(t, db.Pool, p, b, 200*time.Millisecond)

	p.SetDelay(time.Second) // past the search's wait and the late window
	if _, degraded, err := q.EmbedQuery(ctx, "search_site", "opening hours"); err != nil || degraded != embedcache.DegradedUnavailable {
		t.Fatalf("slow provider: degraded %q, %v", degraded, err)
	}
	var outcome string
	var tokens int64
	if !testkit.Eventually(5*time.Second, func() bool {
		return db.Pool.QueryRow(ctx, `SELECT outcome, tokens FROM ledger`).Scan(&outcome, &tokens) == nil
	}) || outcome != budget.OutcomeUnknown || tokens < 8 {
		t.Fatalf("ledger %q %d tokens; want unknown, charged at the reservation", outcome, tokens)
	}
	if !testkit.Eventually(5*time.Second, func() bool { u, _ := b.Today(ctx); return u.Used == tokens }) {
		t.Fatalf("the budget did not charge the %d unknown tokens", tokens)
	}

	p.SetDelay(320 * time.Millisecond) // after the search's wait (250ms), within the late window (400ms)
	before := p.Tokens()
	if _, degraded, _ := q.EmbedQuery(ctx, "search_site", "day rate"); degraded != embedcache.DegradedUnavailable {
		t.Fatalf("late answer: degraded %q, want the search not to wait", degraded)
	}
	if !testkit.Eventually(5*time.Second, func() bool {
		var n int
		return db.Pool.QueryRow(ctx, `SELECT count(*) FROM embedding_cache`).Scan(&n) == nil && n == 1
	}) {
		t.Fatal("the late answer was not cached")
	}
	p.SetDelay(0)
	calls := p.Calls()
	if v, degraded, err := q.EmbedQuery(ctx, "search_site", "Day rate?"); err != nil || degraded != "" || len(v) != 16 || p.Calls() != calls {
		t.Fatalf("the late answer's query again: degraded %q, %v, %d new calls", degraded, err, p.Calls()-calls)
	}
	var late int64
	if err := db.Pool.QueryRow(ctx, `SELECT tokens FROM ledger WHERE outcome = 'ok' AND NOT cache_hit`).Scan(&late); err != nil || late != int64(p.Tokens()-before) {
		t.Fatalf("the late answer is on the ledger with %d tokens (%v); the provider counted %d", late, err, p.Tokens()-before)
	}
}
