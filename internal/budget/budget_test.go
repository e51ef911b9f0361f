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
	var mu sync.Mutex
	var held []*budget.Reservation
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := b.Reserve(ctx, 70)
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
	if len(held) != 14 {
		t.Fatalf("%d reservations of 70 granted within 1000, want 14", len(held))
	}
	if u, _ := b.Today(ctx); u.Reserved != 980 || u.Used != 0 {
		t.Fatalf("while held: %+v", u)
	}
	for _, r := range held {
		if err := r.Settle(ctx, 60); err != nil {
			t.Fatal(err)
		}
	}
	u, err := b.Today(ctx)
	if err != nil {
		t.Fatal(err)
	}
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
	if err := r.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if u, _ := next.Today(ctx); u.Reserved != 0 || u.Used != 0 {
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

func TestLedgerReport(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	l := budget.NewLedger(db.Pool)
	for _, e := range []budget.Entry{
		{Kind: "embedding", Channel: "mcp", Tool: "search_site", Model: "m", Tokens: 10, CostUSD: 0.001, Outcome: "ok"},
		{Kind: "embedding", Channel: "mcp", Tool: "search_site", Model: "m", Tokens: 5, CostUSD: 0.0005, Outcome: "ok"},
		{Kind: "embedding", Channel: "mcp", Tool: "search_site", Model: "m", CacheHit: true, Outcome: "ok"},
		{Kind: "embedding", Channel: "mcp", Tool: "search_site", Model: "m", Outcome: "error"},
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
	if mcp.Calls != 3 || mcp.CacheHits != 1 || mcp.Errors != 1 || mcp.Tokens != 15 || mcp.CostUSD < 0.00149 || mcp.CostUSD > 0.00151 {
		t.Fatalf("mcp row %+v", mcp)
	}
}
