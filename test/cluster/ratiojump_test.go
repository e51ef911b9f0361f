package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestProviderCountJumps: the provider counts 3 tokens per word for a day, and the
// replicas learn that ratio; the next day it counts 8 per word without warning. 300
// distinct searches of four words, 200 ms per provider call, 15 clients through nginx,
// a daily budget of 200 tokens: 60 searches on the first day, 240 on the second. Every
// call in flight when the count jumped was admitted at the learned ratio, so only what
// the replicas hold for calls in flight bounds what the provider counts: each call
// holds its estimate × max(8, 2 × the learned ratio) while in flight, which a provider
// counting at most 8 × sitetools' estimate cannot pass. On each day the provider counts
// at most the limit (the bound is 1.25 ×), the day's used covers what it counted,
// and the second day both answers searches with their vector and spends its budget.
func TestProviderCountJumps(t *testing.T) {
	t.Parallel()
	const limit, clients = 200, 15
	clock := filepath.Join(t.TempDir(), "clock")
	day1 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	setClock(t, clock, day1)
	hooks := clusterHooks{beforeIngest: func(c *cluster) { c.Provider().SetTokensPerWord(3) }}
	c := startClusterWith(t, 3, map[string]string{
		"EMBEDDINGS_DAILY_TOKEN_BUDGET": strconv.Itoa(limit),
		"SITETOOLS_TEST_CLOCK_FILE":     clock,
	}, hooks)
	p := c.Provider()
	p.SetDelay(200 * time.Millisecond)
	conn := c.DB(t)
	queries := jumpQueries(300)

	first := countedDay(t, c, conn, day1, queries[:60], clients)
	t.Logf("day 1, 3 tokens a word: %s; the replicas' stored ratio %.2f", first, storedRatio(t, conn))
	day2 := day1.Add(24 * time.Hour)
	setClock(t, clock, day2)
	p.SetTokensPerWord(8)
	second := countedDay(t, c, conn, day2, queries[60:], clients)
	t.Logf("day 2, 8 tokens a word from its first call: %s; the replicas' stored ratio %.2f", second, storedRatio(t, conn))
	t.Logf("embedding ledger: %s", ledgerSummary(t, conn, "embedding"))
	for _, d := range []dayCount{first, second} {
		if 4*d.counted > 5*limit {
			t.Errorf("%s: the provider counted %d tokens, past 1.25 × the limit of %d", d.day, d.counted, limit)
		} else if d.counted > limit {
			t.Errorf("%s: the provider counted %d tokens, past the limit of %d (within 1.25 ×, but each call's hold should have covered 8 tokens a word)", d.day, d.counted, limit)
		}
		if d.used < d.counted || d.used > limit {
			t.Errorf("%s: the day's used is %d tokens; want at least the %d the provider counted and at most the limit of %d", d.day, d.used, d.counted, limit)
		}
		if d.byReason[""] == 0 || d.byReason["embedding_budget_exhausted"] == 0 {
			t.Errorf("%s: searches by degraded reason %v, want some with their vector and then the budget spent", d.day, d.byReason)
		}
	}
	checkLeases(t, conn)
}

// dayCount is what one simulated day of TestProviderCountJumps cost.
type dayCount struct {
	day                  string
	calls, counted, used int64
	byReason             map[string]int
	longest              time.Duration
}

func (d dayCount) String() string {
	return fmt.Sprintf("%d provider requests counted %d tokens, the day's used %d; searches by degraded reason %v, the longest %v",
		d.calls, d.counted, d.used, d.byReason, d.longest.Round(time.Millisecond))
}

// countedDay sends queries through nginx from clients clients at once on day, waits
// until the replicas hold nothing of the budget, and returns what the provider counted
// and the day's row.
func countedDay(t *testing.T, c *cluster, conn *pgx.Conn, day time.Time, queries []string, clients int) dayCount {
	t.Helper()
	p := c.Provider()
	tokens, calls := p.ReceivedTokens(), p.Calls()
	out := searchMany(func(int) string { return c.URL() }, queries, clients)
	d := dayCount{day: day.Format(time.DateOnly)}
	d.byReason, d.longest = answered(t, out)
	waitIdle(t, conn, "embedding")
	d.calls, d.counted = int64(p.Calls()-calls), int64(p.ReceivedTokens()-tokens)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(used), 0)::bigint FROM budgets WHERE kind = 'embedding' AND day = $1`,
		day.Truncate(24*time.Hour)).Scan(&d.used); err != nil {
		t.Fatalf("the budget of %s: %v", d.day, err)
	}
	return d
}

// jumpQueries returns n distinct queries of four words each.
func jumpQueries(n int) []string {
	words := []string{"pricing", "audit", "privacy", "hosting", "accessibility", "pipelines"}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s jump question %d", words[i%len(words)], i)
	}
	return out
}

// setClock sets the budgets' clock of every replica started with
// SITETOOLS_TEST_CLOCK_FILE=path; each reads the file whole.
func setClock(t *testing.T, path string, at time.Time) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", []byte(at.Format(time.RFC3339Nano)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}
