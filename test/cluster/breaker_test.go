package cluster_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestBreakerOpensAndCloses: the embedding provider's circuit breaker of one replica,
// driven by searches sent straight to it (EMBEDDINGS_TIMEOUT 1s, cool-down 2s).
//
// The provider answers 503: after five failed calls in a row the circuit opens. While
// it is open, searches are answered at once, full-text only, without a provider call,
// and each is counted as a call saved and recorded in the ledger (outcome skipped). Once
// the cool-down has passed, one probe goes to the provider, which has recovered, and
// closes the circuit. Then the provider answers 429 with Retry-After 3s: one call opens
// the circuit at once, for the 3 s it asked rather than the cool-down, without a provider
// call until then, and a probe closes it again. The admin usage report shows both
// openings and the calls saved; the other replicas' circuits never opened.
func TestBreakerOpensAndCloses(t *testing.T) {
	t.Parallel()
	c := startCluster(t, 3, map[string]string{"EMBEDDINGS_TIMEOUT": "1s", "EMBEDDINGS_BREAKER_COOLDOWN": "2s"})
	b := &breakerRun{t: t, c: c, conn: c.DB(t)}
	p := c.Provider()

	p.SetFail(http.StatusServiceUnavailable)
	b.openByFailures()
	b.skipWhileOpen(10)
	p.SetFail(0)
	b.probeCloses()

	p.SetRetryAfter(3 * time.Second)
	p.SetFail(http.StatusTooManyRequests)
	b.openByRetryAfter(3*time.Second, 2*time.Second)
	p.SetFail(0)
	p.SetRetryAfter(0)
	b.probeCloses()

	report := usage(t, c.Admin(0))
	st := report.breaker(t, "embedding")
	t.Logf("replica 0's usage report: embedding breaker %+v", st)
	if st.OpenedTotal < 2 || st.CallsSaved < 10 {
		t.Errorf("replica 0's embedding breaker opened %d times and saved %d calls, want at least 2 and 10", st.OpenedTotal, st.CallsSaved)
	}
	saved := int64(0)
	for _, row := range report.Ledger {
		if row.Kind == "embedding" && row.Tool == "search_site" {
			saved += row.Saved
		}
	}
	if saved < 10 {
		t.Errorf("the usage report's ledger has %d embedding searches saved by the open circuit, want at least 10", saved)
	}
	for i := 1; i < 3; i++ {
		if st := usage(t, c.Admin(i)).breaker(t, "embedding"); st.State != "closed" || st.OpenedTotal != 0 {
			t.Errorf("replica %d, which no search reached, has its embedding breaker %s after %d openings, want closed, never opened",
				i, st.State, st.OpenedTotal)
		}
	}
}

// breakerRun drives replica 0's embedding breaker with searches sent straight to it.
type breakerRun struct {
	t      *testing.T
	c      *cluster
	conn   *pgx.Conn
	n      int       // searches so far, for distinct queries
	opened time.Time // when the circuit was last seen open
}

// search sends a new query to replica 0 and returns its degraded field and how long it took.
func (b *breakerRun) search() (string, time.Duration) {
	b.t.Helper()
	b.n++
	began := time.Now()
	d, err := searchVia(b.c.Replica(0), fmt.Sprintf("%s breaker question %d", topics[b.n%len(topics)], b.n))
	if err != nil {
		b.t.Fatalf("search %d: %v", b.n, err)
	}
	return d, time.Since(began)
}

// state is replica 0's embedding breaker state metric: 0 closed, 1 open, 2 half-open.
func (b *breakerRun) state() float64 {
	return metric(b.t, b.c.Admin(0), "sitetools_provider_breaker_state", map[string]string{"kind": "embedding"})
}

// saved is replica 0's embedding breaker calls_saved metric.
func (b *breakerRun) saved() float64 {
	return metric(b.t, b.c.Admin(0), "sitetools_provider_breaker_calls_saved_total", map[string]string{"kind": "embedding"})
}

// openByFailures searches, one at a time, while the provider fails, until the circuit is
// open; it must open after five failed calls, and no more than six searches.
func (b *breakerRun) openByFailures() {
	t := b.t
	calls := b.c.Provider().Calls()
	for searches := 1; searches <= 8; searches++ {
		rows, _ := ledgerRows(t, b.conn, "embedding", "search_site", "")
		if d, _ := b.search(); d != "embedding_unavailable" {
			t.Fatalf("search %d against a failing provider: degraded %q, want embedding_unavailable", searches, d)
		}
		// The search stops waiting after EMBEDDINGS_TIMEOUT, its call may go on for as long
		// again: the call has ended once its ledger row is written.
		waitFor(t, 10*time.Second, "the failed call's ledger row was not written", func() bool {
			n, _ := ledgerRows(t, b.conn, "embedding", "search_site", "")
			return n > rows
		})
		if b.state() == 1 {
			b.opened = time.Now()
			t.Logf("503: the circuit opened after %d searches, %d provider requests (retries included)", searches, b.c.Provider().Calls()-calls)
			if searches > 6 {
				t.Errorf("the circuit opened after %d failed searches, want at most 6 (EMBEDDINGS_BREAKER_FAILURES 5)", searches)
			}
			return
		}
	}
	t.Fatalf("the circuit was still closed after 8 searches against a provider answering 503")
}

// skipWhileOpen sends n searches while the circuit is open: each is answered at once,
// full-text only, without a provider call, is recorded as skipped and counted as saved.
func (b *breakerRun) skipWhileOpen(n int) {
	t := b.t
	until := usage(t, b.c.Admin(0)).breaker(t, "embedding").Until
	calls, saved := b.c.Provider().Calls(), b.saved()
	skipped, _ := ledgerRows(t, b.conn, "embedding", "search_site", "skipped")
	var longest time.Duration
	for range n {
		d, took := b.search()
		longest = max(longest, took)
		if d != "embedding_unavailable" || took >= 300*time.Millisecond {
			t.Errorf("search %d with the circuit open: degraded %q after %v, want embedding_unavailable at once (under 300 ms)", b.n, d, took)
		}
	}
	if time.Now().After(until) {
		t.Fatalf("the %d searches took until after the cool-down ended (%v): the circuit may have let a probe through", n, until)
	}
	nowSkipped, _ := ledgerRows(t, b.conn, "embedding", "search_site", "skipped")
	t.Logf("open: %d searches, the longest %v; provider requests %d; ledger rows skipped %d; calls saved %.0f",
		n, longest.Round(time.Millisecond), b.c.Provider().Calls()-calls, nowSkipped-skipped, b.saved()-saved)
	if got := b.c.Provider().Calls() - calls; got != 0 {
		t.Errorf("the provider received %d requests while the circuit was open, want none", got)
	}
	if nowSkipped-skipped < int64(n) {
		t.Errorf("the ledger has %d search rows with outcome skipped for %d searches with the circuit open", nowSkipped-skipped, n)
	}
	if got := b.saved() - saved; got < float64(n) {
		t.Errorf("calls_saved_total grew by %v for %d searches the open circuit spared", got, n)
	}
}

// probeCloses waits until the circuit lets a probe through (half-open), sends one search
// to a provider that answers again, and checks that it got its vector and closed the
// circuit.
func (b *breakerRun) probeCloses() {
	t := b.t
	waitFor(t, 15*time.Second, "the open circuit never turned half-open", func() bool {
		return usage(t, b.c.Admin(0)).breaker(t, "embedding").State == "half_open"
	})
	halfOpen := time.Since(b.opened)
	calls := b.c.Provider().Calls()
	if d, _ := b.search(); d != "" {
		t.Errorf("the probe was degraded %q, want its vector from the provider that answers again", d)
	}
	t.Logf("half-open %v after the circuit opened; the probe made %d provider requests; state now %v",
		halfOpen.Round(time.Millisecond), b.c.Provider().Calls()-calls, b.state())
	if s := b.state(); s != 0 {
		t.Errorf("after a successful probe the breaker state is %v, want 0 (closed)", s)
	}
}

// openByRetryAfter sends one search to a provider that answers 429 with Retry-After
// after: the circuit must open at once, until about after from now (longer than the
// cool-down), and searches make no provider call until it turns half-open.
func (b *breakerRun) openByRetryAfter(after, cooldown time.Duration) {
	t := b.t
	calls := b.c.Provider().Calls()
	b.search()
	b.opened = time.Now()
	if s := b.state(); s != 1 {
		t.Fatalf("after one 429 with Retry-After %v the breaker state is %v, want 1 (open)", after, s)
	}
	until := usage(t, b.c.Admin(0)).breaker(t, "embedding").Until
	t.Logf("429: the circuit opened after 1 search, %d provider requests, until %v from now",
		b.c.Provider().Calls()-calls, time.Until(until).Round(time.Millisecond))
	if d := time.Until(until); d <= cooldown || d > after {
		t.Errorf("the circuit opened until %v from now, want the provider's Retry-After %v (more than the cool-down %v)", d, after, cooldown)
	}
	calls = b.c.Provider().Calls()
	searches := 0
	pace := time.NewTicker(50 * time.Millisecond) // a search now and then, not a flood
	defer pace.Stop()
	for time.Until(until) > 200*time.Millisecond { // no search at the turn, which would probe
		if d, _ := b.search(); d != "embedding_unavailable" {
			t.Errorf("search with the circuit open by Retry-After: degraded %q, want embedding_unavailable", d)
		}
		searches++
		<-pace.C
	}
	t.Logf("%d searches while open by Retry-After, %d provider requests", searches, b.c.Provider().Calls()-calls)
	if got := b.c.Provider().Calls() - calls; got != 0 || searches == 0 {
		t.Errorf("%d searches with the circuit open by Retry-After made %d provider requests, want some searches and none", searches, got)
	}
}
