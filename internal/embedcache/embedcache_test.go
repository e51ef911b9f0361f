package embedcache_test

import (
	"context"
	"testing"

	"github.com/sitetools/sitetools/internal/budget"
	"github.com/sitetools/sitetools/internal/embedcache"
	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
)

func TestCacheKeyIgnoresCaseSpacingAndPunctuation(t *testing.T) {
	a := embedcache.CacheKey("m", "", "  How do I book a call?  ")
	for _, q := range []string{"how do i book a call", "HOW  DO I\tBOOK A CALL!", "How do I book a call?"} {
		if embedcache.CacheKey("m", "", q) != a {
			t.Fatalf("%q keys differently", q)
		}
	}
	if embedcache.CacheKey("other-model", "", "how do i book a call") == a || embedcache.CacheKey("m", "", "how do i book a meeting") == a {
		t.Fatal("different model or query, same key")
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
