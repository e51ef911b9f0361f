package cluster_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The cost guard of the query embeddings across replicas: what a provider may bill
// stays within the daily budget however it fails or counts.

// TestSlowProviderIsCharged: the provider takes longer than the searches wait and
// longer than the replicas let a request run (EMBEDDINGS_TIMEOUT and twice that), so no
// request is answered and none settles what the provider counted. 120 distinct searches
// through nginx, 8 at a time, are all answered (full-text only). What the provider
// received stays within the daily budget and its margin, every request it may have
// received is charged at its reservation (ledger outcome unknown), so that the day's used
// covers what reached the provider without passing the limit; some replica's circuit
// breaker opens and spares the calls that follow; and once idle, no token stays reserved
// and no lease is left expired.
func TestSlowProviderIsCharged(t *testing.T) {
	t.Parallel()
	const limit = 400
	c := startCluster(t, 3, map[string]string{
		"EMBEDDINGS_TIMEOUT":            "300ms",
		"EMBEDDINGS_DAILY_TOKEN_BUDGET": strconv.Itoa(limit),
	})
	p := c.Provider()
	before, calls := p.ReceivedTokens(), p.Calls()
	p.SetDelay(800 * time.Millisecond)
	began := time.Now()
	// Queries of two words, about 3 tokens: a reservation is then 12 tokens (ceil(1.25 × 3)
	// + 8, the ingest having learned that the provider counts as sitetools does), which
	// is what each unanswered request is charged, and a call holds 32 tokens while in
	// flight (3 × 8 + 8). The budget lets the 8 clients' first calls and the 8 after them
	// through (96 + 8 × 32 ≤ 400), at least 13 calls: spread over three replicas, some
	// replica makes five, all of which fail, enough to open its breaker
	// (EMBEDDINGS_BREAKER_FAILURES 5). With 200 tokens only 9 to 11 calls got through
	// before the clients whose searches were refused had used up the queries.
	queries := make([]string, 120)
	for i := range queries {
		queries[i] = fmt.Sprintf("%s %d", []string{"pricing", "audit", "privacy", "hosting"}[i%4], i)
	}
	out := searchMany(func(int) string { return c.URL() }, queries, 8)
	byReason, longest := answered(t, out)
	t.Logf("120 searches in %v (the longest %v): by degraded reason %v", time.Since(began).Round(time.Millisecond),
		longest.Round(time.Millisecond), byReason)

	conn := c.DB(t)
	used := waitIdle(t, conn, "embedding")
	received := int64(p.ReceivedTokens() - before)
	t.Logf("the provider received %d requests, %d tokens of queries (limit %d, bound 1.25 × limit = %d); the day's used is %d",
		p.Calls()-calls, received, limit, limit*5/4, used)
	t.Logf("embedding ledger: %s", ledgerSummary(t, conn, "embedding"))
	if received == 0 || 4*received > 5*limit {
		t.Errorf("the provider received %d tokens of queries, want more than 0 and at most 1.25 × %d", received, limit)
	}
	if used < received {
		t.Errorf("the day's used is %d tokens, less than the %d the provider received: unknown deliveries went uncharged", used, received)
	}
	if used > limit {
		t.Errorf("the day's used is %d tokens, past the limit of %d", used, limit)
	}
	if n, tokens := ledgerRows(t, conn, "embedding", "search_site", "unknown"); n == 0 || tokens == 0 {
		t.Errorf("the ledger has %d search_site rows with outcome unknown (%d tokens), want some", n, tokens)
	}
	spareWhileOpen(t, c)
	checkLeases(t, conn)
}

// spareWhileOpen checks that some replica's embedding circuit opened once every call of
// the searches failed (the budget admits some 15 calls, so one of the three replicas made
// at least five, EMBEDDINGS_BREAKER_FAILURES), and that the replicas whose circuit is open
// answer new searches without calling the provider, counting the calls saved. The
// searches that ran while the circuits were still closing may all have been refused by
// the spent budget first, so the spared calls are asked for here, once the circuits
// stand open, rather than hoped for among them.
func spareWhileOpen(t *testing.T, c *cluster) {
	t.Helper()
	opened, savedBefore, each := breakerTotals(t, c, "embedding")
	t.Logf("embedding breakers once idle: %s", each)
	if opened < 1 {
		t.Fatalf("no replica's embedding breaker opened (opened_total summed %v) against a provider that never answered in time", opened)
	}
	calls, sent := c.Provider().Calls(), 0
	for i := range c.replicas {
		if metric(t, c.Admin(i), "sitetools_provider_breaker_state", map[string]string{"kind": "embedding"}) != 1 {
			continue
		}
		for j := range 3 {
			degraded, err := searchVia(c.Replica(i), fmt.Sprintf("opened circuit %d question %d", i, j))
			if err != nil || degraded != "embedding_unavailable" {
				t.Errorf("replica %d with its circuit open: degraded %q, %v; want embedding_unavailable", i, degraded, err)
			}
			sent++
		}
	}
	_, saved, each := breakerTotals(t, c, "embedding")
	t.Logf("embedding breakers after %d searches sent to the open circuits: %s", sent, each)
	if sent == 0 {
		t.Errorf("no replica's embedding circuit stands open (state 1) right after it opened: %s", each)
	}
	if got := saved - savedBefore; got != float64(sent) {
		t.Errorf("the open circuits saved %v calls of the %d searches sent to them", got, sent)
	}
	if got := c.Provider().Calls() - calls; got != 0 {
		t.Errorf("the provider received %d requests from replicas whose circuit is open", got)
	}
}

// TestOverCountingProvider: the provider counts 8 tokens for every word of a query, far
// more than sitetools' own count. 120 distinct searches through nginx, 8 at a time, until
// the budget is spent: what the provider counted (and billed, for the answered requests)
// stays within 1.25 × the limit, the day's used never passes the limit, and it is exactly
// what the ledger's rows of the searches add up to. This holds whether the replicas know
// the provider's ratio from the ingest (reservations of 1.25 × the ratio) or not (a fresh
// deployment: 8 × sitetools' count until its first report).
func TestOverCountingProvider(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		forget bool // delete the ratio the ingest stored before the replicas start
	}{
		{name: "ratio learned at ingest"},
		{name: "ratio not known", forget: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			overCounting(t, tc.forget)
		})
	}
}

// overCounting is a case of TestOverCountingProvider.
func overCounting(t *testing.T, forget bool) {
	const limit = 200
	hooks := clusterHooks{
		beforeIngest: func(c *cluster) { c.Provider().SetTokensPerWord(8) },
		beforeServe: func(c *cluster) {
			conn := c.DB(t)
			t.Logf("the ingest stored the provider's ratio %.2f", storedRatio(t, conn))
			if forget {
				execSQL(t, conn, `DELETE FROM provider_ratios`)
			}
		},
	}
	c := startClusterWith(t, 3, map[string]string{"EMBEDDINGS_DAILY_TOKEN_BUDGET": strconv.Itoa(limit)}, hooks)
	p := c.Provider()
	before, calls := p.ReceivedTokens(), p.Calls()
	out := searchMany(func(int) string { return c.URL() }, distinctQueries("over-counted", 120), 8)
	byReason, _ := answered(t, out)
	conn := c.DB(t)
	used := waitIdle(t, conn, "embedding")
	counted := int64(p.ReceivedTokens() - before)
	_, ledgered := ledgerRows(t, conn, "embedding", "search_site", "")
	t.Logf("by degraded reason %v; the provider received %d requests and counted %d tokens (bound 1.25 × %d = %d); used %d, the searches' ledger rows %d tokens; ratio now %.2f",
		byReason, p.Calls()-calls, counted, limit, limit*5/4, used, ledgered, storedRatio(t, conn))
	t.Logf("embedding ledger: %s", ledgerSummary(t, conn, "embedding"))
	if byReason[""] == 0 || byReason["embedding_budget_exhausted"] == 0 {
		t.Errorf("searches by degraded reason %v, want some with their vector and then the budget spent", byReason)
	}
	if counted == 0 || 4*counted > 5*limit {
		t.Errorf("the provider counted %d tokens of queries, want more than 0 and at most 1.25 × %d", counted, limit)
	}
	if used > limit {
		t.Errorf("the day's used is %d tokens, past the limit of %d", used, limit)
	}
	if used != ledgered {
		t.Errorf("the day's used is %d tokens, the ledger's rows of the searches %d", used, ledgered)
	}
	checkLeases(t, conn)
}

// storedRatio is the embedding provider's ratio of reported to estimated tokens as the
// replicas share it (0: none stored).
func storedRatio(t *testing.T, conn *pgx.Conn) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var k float64
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(ratio), 0) FROM provider_ratios WHERE kind = 'embedding'`).Scan(&k); err != nil {
		t.Fatalf("provider ratios: %v", err)
	}
	return k
}

// execSQL runs sql on conn, failing the test on an error.
func execSQL(t *testing.T, conn *pgx.Conn, sql string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// TestSingleFlightAcrossReplicas: 12 identical searches of a new query at once, 4 sent
// straight to each of the 3 replicas, while the provider takes 200 ms to answer: the
// provider receives one request for them, and every search gets its vector, the others
// through the shared cache. Five rounds, each with a query of its own.
func TestSingleFlightAcrossReplicas(t *testing.T) {
	t.Parallel()
	const rounds, each = 5, 12
	c := startCluster(t, 3, nil)
	p := c.Provider()
	p.SetDelay(200 * time.Millisecond)
	for round := range rounds {
		query := fmt.Sprintf("round %d: which services does a single flight of questions need", round)
		queries := make([]string, each)
		for i := range queries {
			queries[i] = query
		}
		calls := p.Calls()
		out := searchMany(func(i int) string { return c.Replica(i % 3) }, queries, each)
		byReason, longest := answered(t, out)
		got := p.Calls() - calls
		t.Logf("round %d: %d provider requests; by degraded reason %v; the longest search %v", round, got, byReason, longest.Round(time.Millisecond))
		if got != 1 {
			t.Errorf("round %d: the provider received %d requests for one query searched %d times at once, want 1", round, got, each)
		}
		// A search waits EMBEDDINGS_TIMEOUT (5 s) for the vector: plenty for one 200 ms
		// request and the 20 ms polls of the shared cache.
		if byReason[""] != each {
			t.Errorf("round %d: %d of %d searches got the query's vector, want all", round, byReason[""], each)
		}
	}
}

// TestKilledReplicaLeaseIsReclaimed: a replica holds part of the day's budget in its
// lease for four searches whose provider calls hang, and is killed (SIGKILL) before they
// settle. No replica renews its lease any more; once the lease has expired, another
// replica reclaims it: the row is gone, its tokens are charged whole to the day's used
// (the provider may have served the calls), and the ledger has a row for it (tool lease,
// outcome unknown). No reservation outlives its lease by more than a minute. Meanwhile
// the cluster answers searches through nginx.
func TestKilledReplicaLeaseIsReclaimed(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, map[string]string{"EMBEDDINGS_TIMEOUT": "5s", "EMBEDDINGS_DAILY_TOKEN_BUDGET": "400"})
	p := c.Provider()
	conn := c.DB(t)
	p.SetDelay(20 * time.Second)
	calls := p.Calls()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = searchVia(c.Replica(0), fmt.Sprintf("held by the killed replica, question %d", i)) // it dies
		}()
	}
	t.Cleanup(wg.Wait)
	waitFor(t, 10*time.Second, "the four searches' provider calls did not arrive", func() bool { return p.Calls() >= calls+4 })
	usedBefore, _ := budgetRow(t, conn, "embedding")
	pid := c.Pid(0)
	c.Kill(0)
	killed := time.Now()
	p.SetDelay(0)
	dead := leasesOf(t, conn, "embedding", pid) // the killed replica changes them no more
	if len(dead) != 1 || dead[0].granted == 0 {
		t.Fatalf("the killed replica %d holds leases %+v, want one with tokens", pid, dead)
	}
	l := dead[0]
	t.Logf("the killed replica's lease %d holds %d tokens and expires %v after the kill", l.id, l.granted, l.expires.Sub(killed).Round(time.Millisecond))

	searches, degraded := 0, map[string]int{}
	var last time.Time
	waitFor(t, 120*time.Second, fmt.Sprintf("the killed replica's lease %d was not reclaimed", l.id), func() bool {
		if time.Since(last) >= 250*time.Millisecond { // a search now and then, ten distinct queries in turn
			last = time.Now()
			d, err := searchVia(c.URL(), fmt.Sprintf("%s while a lease waits, question %d", topics[searches%len(topics)], searches%10))
			if err != nil {
				t.Fatalf("search %d through nginx after the kill: %v", searches, err)
			}
			searches++
			if d != "" {
				degraded[d]++
			}
		}
		return !leaseExists(t, conn, l.id)
	})
	reclaimed := time.Now()
	t.Logf("reclaimed %v after the kill, %v after the lease expired; %d searches answered through nginx meanwhile (degraded: %v)",
		reclaimed.Sub(killed).Round(time.Millisecond), reclaimed.Sub(l.expires).Round(time.Millisecond), searches, degraded)
	if d := reclaimed.Sub(l.expires); d > time.Minute {
		t.Errorf("the lease was reclaimed %v after it expired, want within a minute", d)
	}
	used := waitIdle(t, conn, "embedding")
	t.Logf("used %d before the kill, %d once idle after the reclaim; embedding ledger: %s", usedBefore, used, ledgerSummary(t, conn, "embedding"))
	if used-usedBefore < l.granted {
		t.Errorf("the day's used grew by %d tokens after the kill, less than the %d the killed replica's lease held", used-usedBefore, l.granted)
	}
	if n, tokens := ledgerRows(t, conn, "embedding", "lease", "unknown"); n != 1 || tokens != l.granted {
		t.Errorf("the ledger has %d rows of reclaimed leases (tool lease, outcome unknown) with %d tokens, want 1 with %d", n, tokens, l.granted)
	}
	checkLeases(t, conn)
}
