package budget_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/budget"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
)

func TestBudgetReservationsNeverExceedTheLimit(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	day := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	b := budget.NewBudget(db.Pool, "embedding", 1000, func() time.Time { return day })
	// 40 concurrent reservations of 70 tokens, held: at most 14 fit in 1000.
	held := reserveAll(t, b, 40, 70)
	if len(held) != 14 {
		t.Fatalf("%d reservations of 70 granted within 1000, want 14", len(held))
	}
	if u := today(t, b); u.Reserved < 980 || u.Reserved > 1000 || u.Used != 0 {
		t.Fatalf("while held: %+v", u)
	}
	for _, r := range held {
		r.Settle(60)
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	u := today(t, b)
	if u.Reserved != 0 || u.Used != 14*60 {
		t.Fatalf("after settling: %+v", u)
	}
	// Settled below the estimate: what was not used can be reserved again.
	if _, err := b.Reserve(ctx, 1000-u.Used); err != nil {
		t.Fatalf("the settled remainder is not available: %v", err)
	}
	if _, err := b.Reserve(ctx, 1); err != budget.ErrBudgetExhausted {
		t.Fatalf("over the limit: %v", err)
	}
	// A new day has a new budget; a released reservation costs nothing.
	next := budget.NewBudget(db.Pool, "embedding", 1000, func() time.Time { return day.Add(24 * time.Hour) })
	r, err := next.Reserve(ctx, 500)
	if err != nil {
		t.Fatal(err)
	}
	r.Release()
	if err := next.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if u := today(t, next); u.Reserved != 0 || u.Used != 0 {
		t.Fatalf("after release: %+v", u)
	}
	if _, err := next.Reserve(ctx, 1001); err != budget.ErrBudgetExhausted {
		t.Fatalf("a single reservation over the limit: %v", err)
	}
	unlimited := budget.NewBudget(db.Pool, "llm", 0, nil)
	if _, err := unlimited.Reserve(ctx, 1<<40); err != nil {
		t.Fatalf("unlimited: %v", err)
	}
}

// Replicas lease from one day's budget: held together they never pass the limit, and
// what one gives back the other can take.
func TestReplicasShareTheLimit(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	a := budget.NewBudget(db.Pool, "embedding", 1000, nil)
	b := budget.NewBudget(db.Pool, "embedding", 1000, nil)
	var wg sync.WaitGroup
	var heldA, heldB []*budget.Reservation
	wg.Add(2)
	go func() { defer wg.Done(); heldA = reserveAll(t, a, 30, 50) }()
	go func() { defer wg.Done(); heldB = reserveAll(t, b, 30, 50) }()
	wg.Wait()
	// Near the limit, a few tokens may sit free in the other replica's lease (at most a
	// 32nd of the limit, given back once it idles): one reservation fewer may fit.
	if n := len(heldA) + len(heldB); n != 20 && n != 19 {
		t.Fatalf("%d + %d reservations of 50 held within 1000, want 20 (or 19) in all", len(heldA), len(heldB))
	}
	if u := today(t, a); u.Reserved > 1000 {
		t.Fatalf("the replicas lease %d of 1000", u.Reserved)
	}
	for _, r := range heldA {
		r.Release()
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// The other replica's lease may hold up to a 32nd of the limit besides: one more.
	if got := len(reserveAll(t, b, 30, 50)); got != len(heldA) && got != len(heldA)+1 {
		t.Fatalf("after the other replica released %d, this one took %d", len(heldA), got)
	}
}

// A call that may have reached the provider is charged at its reservation, retries
// included; one that provably did not is not charged; a provider that counts more than
// was reserved is charged what it counts.
func TestOutcomesCharge(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	b := budget.NewBudget(db.Pool, "embedding", 1000, nil)
	unknown, _ := b.Reserve(ctx, 40)
	if err := unknown.Extend(ctx, 40); err != nil {
		t.Fatal(err)
	}
	unknown.Unknown()
	released, _ := b.Reserve(ctx, 100)
	released.Release()
	over, _ := b.Reserve(ctx, 10)
	over.Settle(25)
	unknown.Settle(1) // a second report of a finished call changes nothing
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if u := today(t, b); u.Used != 80+25 || u.Reserved != 0 {
		t.Fatalf("used %d reserved %d, want 105 and 0", u.Used, u.Reserved)
	}
	if r, err := b.Reserve(ctx, 895); err != nil {
		t.Fatalf("895 tokens are left: %v", err)
	} else if err := r.Extend(ctx, 1); err != budget.ErrBudgetExhausted {
		t.Fatalf("extending past the limit: %v", err)
	} else if r.Tokens() != 895 {
		t.Fatalf("a refused extension changed the reservation to %d", r.Tokens())
	}
}

// A replica killed with tokens leased: its lease expires, and another replica reclaims
// it, charged whole as spent, with a ledger row that says so.
func TestExpiredLeasesAreReclaimed(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	dead := budget.New(db.Pool, budget.Options{Kind: "embedding", Limit: 200, PricePerMTok: 1})
	for range 4 {
		if _, err := dead.Reserve(ctx, 16); err != nil {
			t.Fatal(err)
		}
	}
	live := budget.NewBudget(db.Pool, "embedding", 200, nil)
	if n, err := live.Reclaim(ctx); err != nil || n != 0 {
		t.Fatalf("reclaimed %d live leases (%v)", n, err)
	}
	if _, err := db.Pool.Exec(ctx, `UPDATE budget_leases SET expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	held := today(t, live).Reserved
	if held < 64 {
		t.Fatalf("the dead replica's lease holds %d, want at least 64", held)
	}
	// The live replica needs more than is left: reserving reclaims first.
	if _, err := live.Reserve(ctx, 200-held+1); err != budget.ErrBudgetExhausted {
		t.Fatalf("reserve after reclaim: %v (the reclaimed tokens are spent, not free)", err)
	}
	var leases int
	var tokens int64
	if err := db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM budget_leases), (SELECT coalesce(sum(tokens), 0) FROM ledger WHERE outcome = 'unknown' AND tool = 'lease')`).Scan(&leases, &tokens); err != nil {
		t.Fatal(err)
	}
	if u := today(t, live); leases != 0 || u.Used != held || u.Reserved != 0 || tokens != held {
		t.Fatalf("after reclaim: %d leases, %+v, ledger %d unknown tokens; want the %d held charged", leases, u, tokens, held)
	}
}

func TestReservationsAreSizedByReportedRatio(t *testing.T) {
	b := budget.NewBudget(nil, "embedding", 0, nil)
	if got := b.Size("m", 10); got != 80 {
		t.Fatalf("before any report: %d, want 8 × 10", got)
	}
	b.Learn("m", 10, 40) // the provider counts 4× the estimate
	if got := b.Size("m", 100); got != 500 {
		t.Fatalf("after a 4× report: %d, want 100 × 4 × 1.25", got)
	}
	b.Learn("m", 10, 80) // more: at once
	if got := b.Ratio("m"); got != 8 {
		t.Fatalf("ratio %v after an 8× report, want 8", got)
	}
	b.Learn("m", 10, 40) // less: a tenth of the way down
	if got := b.Ratio("m"); got < 7.59 || got > 7.61 {
		t.Fatalf("ratio %v after a 4× report, want 7.6", got)
	}
	if got := b.Size("other", 10); got != 80 {
		t.Fatalf("another model: %d", got)
	}
	b.Learn("low", 100, 50)
	if got := b.Size("low", 100); got != 100 {
		t.Fatalf("a provider that counts less: %d, want never below the estimate", got)
	}
}

// reserveAll makes n concurrent reservations of tokens on b and returns those granted.
func reserveAll(t *testing.T, b *budget.Budget, n int, tokens int64) []*budget.Reservation {
	t.Helper()
	var mu sync.Mutex
	var held []*budget.Reservation
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := b.Reserve(context.Background(), tokens)
			if err == budget.ErrBudgetExhausted {
				return
			}
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			held = append(held, r)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return held
}

func today(t *testing.T, b *budget.Budget) budget.Usage {
	t.Helper()
	u, err := b.Today(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestLedgerReport(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	l := budget.NewLedger(db.Pool)
	for _, e := range []budget.Entry{
		{Kind: "embedding", Channel: "mcp", Tool: "search_site", Model: "m", Tokens: 10, CostUSD: 0.001, Outcome: "ok"},
		{Kind: "embedding", Channel: "mcp", Tool: "search_site", Model: "m", Tokens: 5, CostUSD: 0.0005, Outcome: "ok"},
		{Kind: "embedding", Channel: "mcp", Tool: "search_site", Model: "m", CacheHit: true, Outcome: "ok"},
		{Kind: "embedding", Channel: "mcp", Tool: "search_site", Model: "m", Outcome: "error"},
		{Kind: "embedding", Channel: "mcp", Tool: "search_site", Model: "m", Tokens: 8, Outcome: "unknown"},
		{Kind: "embedding", Channel: "mcp", Tool: "search_site", Model: "m", Outcome: "skipped"},
		{Kind: "embedding", Tool: "ingest", Model: "m", Tokens: 100, Outcome: "ok"},
	} {
		if err := l.Record(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := l.Report(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("rows %+v", rows)
	}
	var mcp budget.ReportRow
	for _, r := range rows {
		if r.Channel == "mcp" {
			mcp = r
		} else if r.Channel != "internal" || r.Tokens != 100 {
			t.Fatalf("row %+v", r)
		}
	}
	if mcp.Calls != 4 || mcp.CacheHits != 1 || mcp.Errors != 1 || mcp.Unknown != 1 || mcp.Saved != 1 || mcp.Tokens != 23 || mcp.CostUSD < 0.00149 || mcp.CostUSD > 0.00151 {
		t.Fatalf("mcp row %+v", mcp)
	}
}

// A reservation whose call outlived its deadline by the margin without settling is
// charged as spent by its own replica: the call may have been served.
func TestUnsettledReservationsExpire(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	b := budget.NewBudget(db.Pool, "llm", 1000, nil)
	deadline, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	stuck, err := b.Reserve(deadline, 100)
	if err != nil {
		t.Fatal(err)
	}
	live, err := b.Reserve(deadline, 50)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Now().Add(time.Hour + budget.ReservationMargin); stuck.ExpiresAt().Before(want.Add(-time.Minute)) {
		t.Errorf("the reservation's lease ends %v, want its call's deadline plus the margin", stuck.ExpiresAt())
	}
	stuck.Outlive()
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	live.Settle(20)
	stuck.Settle(1) // too late: it was charged whole
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if u := today(t, b); u.Used != 120 || u.Reserved != 0 {
		t.Fatalf("%+v: want the expired 100 and the settled 20 used, nothing reserved", u)
	}
}

// TestLedgerRecordsWithStatements: the statements recorded with a call are written with
// its row; when PostgreSQL refuses one of them, the row is still written, once, and the
// refusal is returned.
func TestLedgerRecordsWithStatements(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	l := budget.NewLedger(db.Pool)
	e := budget.Entry{Kind: "embedding", Channel: "mcp", Tool: "search_site", Model: "m", Tokens: 7, Outcome: "ok"}
	claim := func(key string) budget.Statement {
		return budget.Statement{SQL: `INSERT INTO embedding_claims (key, until) VALUES ($1, now() + interval '1 minute')`, Args: []any{[]byte(key)}}
	}
	if err := l.Record(ctx, e, claim("a"), claim("b")); err != nil {
		t.Fatalf("record with two statements: %v", err)
	}
	err := l.Record(ctx, e, claim("c"), claim("a")) // "a" is there: a duplicate key
	if err == nil {
		t.Fatal("a refused statement recorded with the call: no error")
	}
	var rows, tokens, claims int64
	if err := db.Pool.QueryRow(ctx, `SELECT count(*), sum(tokens) FROM ledger`).Scan(&rows, &tokens); err != nil {
		t.Fatal(err)
	}
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM embedding_claims`).Scan(&claims); err != nil {
		t.Fatal(err)
	}
	if rows != 2 || tokens != 14 {
		t.Errorf("the ledger has %d rows of %d tokens, want 2 of 14: every call recorded once (%v)", rows, tokens, err)
	}
	if claims != 2 {
		t.Errorf("%d claims written, want the first call's 2: the refused call's statements are not half-written", claims)
	}
}
