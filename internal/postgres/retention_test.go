package postgres_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/insights"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
)

// TestPrune: each table shrinks by what the retention no longer keeps, in several batches
// where there are many, and nothing current is touched.
func TestPrune(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	exec := func(sql string) {
		t.Helper()
		if _, err := db.Pool.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// 12 000 ledger rows past 400 days (three batches), and the current ones by tool name.
	exec(`INSERT INTO ledger (at, kind, channel, tool, model, tokens, cache_hit, outcome)
		SELECT now() - interval '401 days' - i * interval '1 minute', 'embedding', 'api', 'old', 'm', 1, false, 'ok'
		FROM generate_series(1, 12000) AS i`)
	exec(`INSERT INTO ledger (at, kind, channel, tool, model, tokens, cache_hit, outcome) VALUES
		(now() - interval '399 days', 'llm', 'chat', 'kept-399', 'm', 1, false, 'ok'),
		(now(), 'embedding', 'api', 'kept-now', 'm', 1, false, 'ok')`)
	exec(`INSERT INTO budgets (day, kind, used) VALUES
		(current_date - 401, 'embedding', 1), (current_date - 401, 'llm', 1),
		(current_date - 399, 'embedding', 1), (current_date, 'embedding', 1)`)
	// Embedding cache: one unused for 31 days, one for 29 (over the row cap of 3), and
	// three used in the last hours.
	exec(`INSERT INTO embedding_cache (key, model, embedding, used_at) VALUES
		('\x01', 'm', '[1,0]', now() - interval '31 days'),
		('\x02', 'm', '[1,0]', now() - interval '29 days'),
		('\x03', 'm', '[1,0]', now() - interval '3 hours'),
		('\x04', 'm', '[1,0]', now() - interval '2 hours'),
		('\x05', 'm', '[1,0]', now() - interval '1 hour')`)
	exec(`INSERT INTO idempotency_keys (tool, key_hash, args_hash, state, expires_at) VALUES
		('t', '\x01', '\x00', 'done', now() - interval '1 minute'),
		('t', '\x02', '\x00', 'done', now() + interval '1 hour'),
		('t', '\x03', '\x00', 'pending', now() + interval '1 hour')`)
	// Insight counts: as the ledger, past 400 days they go.
	exec(`INSERT INTO activity_daily (day, event, detail, n) VALUES
		(current_date - 401, 'search', 'chat', 5), (current_date - 399, 'search', 'mcp', 3), (current_date, 'feedback', 'model/up/none', 1)`)
	exec(`INSERT INTO page_daily (day, url, cited, top) VALUES
		(current_date - 401, 'https://example.com/old', 1, 0), (current_date, 'https://example.com/now', 2, 1)`)

	r := postgres.Retention{LedgerDays: 400, EmbeddingCacheDays: 30, EmbeddingCacheMaxRows: 3}
	got, err := db.Prune(ctx, r, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := (postgres.Pruned{Ledger: 12000, Budgets: 2, EmbeddingCache: 2, Idempotency: 1, Insights: 2}); got != want {
		t.Errorf("Prune = %+v; want %+v", got, want)
	}
	rows := func(sql string) []string {
		t.Helper()
		r, err := db.Pool.Query(ctx, sql)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for r.Next() {
			var s string
			if err := r.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	for sql, want := range map[string][]string{
		`SELECT tool FROM ledger ORDER BY tool`:                                            {"kept-399", "kept-now"},
		`SELECT (current_date - day)::text || ' ' || kind FROM budgets ORDER BY day, kind`: {"399 embedding", "0 embedding"},
		`SELECT encode(key, 'hex') FROM embedding_cache ORDER BY key`:                      {"03", "04", "05"},
		`SELECT encode(key_hash, 'hex') FROM idempotency_keys ORDER BY key_hash`:           {"02", "03"},
		`SELECT event || ' ' || detail FROM activity_daily ORDER BY day`:                   {"search mcp", "feedback model/up/none"},
		`SELECT url FROM page_daily`:                                                       {"https://example.com/now"},
	} {
		if got := rows(sql); !slices.Equal(got, want) {
			t.Errorf("%s: %q; want %q", sql, got, want)
		}
	}

	// Again: nothing left to delete. With the limits off, nothing is deleted at all.
	if got, err := db.Prune(ctx, r, false); err != nil || got != (postgres.Pruned{}) {
		t.Errorf("second Prune = %+v, %v; want nothing", got, err)
	}
	exec(`INSERT INTO ledger (at, kind, channel, tool, model, tokens, cache_hit, outcome)
		VALUES (now() - interval '9000 days', 'llm', 'chat', 'ancient', 'm', 1, false, 'ok')`)
	if got, err := db.Prune(ctx, postgres.Retention{}, false); err != nil || got != (postgres.Pruned{}) {
		t.Errorf("Prune with every limit off = %+v, %v; want nothing", got, err)
	}
}

// TestPruneLock: one process prunes at a time. Without waiting, a second one is told the
// lock is busy and deletes nothing; waiting, it runs once the first is done.
func TestPruneLock(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `INSERT INTO idempotency_keys (tool, key_hash, args_hash, expires_at)
		VALUES ('t', '\x01', '\x00', now() - interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	holder, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock($1)`, postgres.PruneLockKey); err != nil {
		t.Fatal(err)
	}
	if got, err := db.Prune(ctx, postgres.Retention{}, false); !errors.Is(err, postgres.ErrPruneBusy) || got != (postgres.Pruned{}) {
		t.Fatalf("Prune while another holds the lock = %+v, %v; want ErrPruneBusy", got, err)
	}
	done := make(chan postgres.Pruned)
	go func() {
		got, err := db.Prune(ctx, postgres.Retention{}, true)
		if err != nil {
			t.Error(err)
		}
		done <- got
	}()
	// The waiting Prune shows up as a lock wait before the holder lets go.
	waitFor(t, func() bool {
		var waiting bool
		err := db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted)`).Scan(&waiting)
		return err == nil && waiting
	})
	var left int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM idempotency_keys`).Scan(&left); err != nil || left != 1 {
		t.Fatalf("rows while waiting: %d, %v; want 1", left, err)
	}
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, postgres.PruneLockKey); err != nil {
		t.Fatal(err)
	}
	holder.Release()
	if got := <-done; got.Idempotency != 1 {
		t.Errorf("waiting Prune = %+v; want the expired key deleted", got)
	}
}

// waitFor polls cond until it holds, failing the test after 10 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10s")
		}
		<-tick.C
	}
}

// TestPruneRatedAnswers: a rated answer's row stays as long as its id may be taken (its
// day at most AnswerIDMaxAge and a day of grace ago), whatever the retention, and goes
// the day after.
func TestPruneRatedAnswers(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	kept := int((insights.AnswerIDMaxAge + 24*time.Hour) / (24 * time.Hour))
	if _, err := db.Pool.Exec(ctx, `INSERT INTO rated_answers (answer, day, detail)
		SELECT sha256(d::text::bytea), (now() AT TIME ZONE 'UTC')::date - d, 'model/up/none' FROM unnest($1::int[]) AS d`,
		[]int{0, kept, kept + 1, 400}); err != nil {
		t.Fatal(err)
	}
	got, err := db.Prune(ctx, postgres.Retention{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if got != (postgres.Pruned{RatedAnswers: 2}) {
		t.Errorf("Prune = %+v; want the 2 rows of expired ids", got)
	}
	var left []int
	rows, err := db.Pool.Query(ctx, `SELECT (now() AT TIME ZONE 'UTC')::date - day FROM rated_answers ORDER BY day DESC`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var d int
		if err := rows.Scan(&d); err != nil {
			t.Fatal(err)
		}
		left = append(left, d)
	}
	if !slices.Equal(left, []int{0, kept}) {
		t.Errorf("rows left of days %v ago; want %v", left, []int{0, kept})
	}
}
