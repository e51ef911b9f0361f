package budget_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/budget"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
)

// A client spends at most its share, on every replica together; another client is not
// affected; the share is corrected to what the provider counted.
func TestClientShares(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	var reached atomic.Int64
	opts := budget.Options{Kind: "llm", Limit: 10_000, ClientShare: 1000, ClientSecret: []byte("a secret the replicas share, 32 bytes"),
		OnFairUse: func(e string) {
			if e == budget.EventShareReached {
				reached.Add(1)
			}
		}}
	a, b := budget.New(db.Pool, opts), budget.New(db.Pool, opts)
	alice := budget.WithClient(ctx, "192.0.2.1")
	bob := budget.WithClient(ctx, "2001:db8::/64")

	// 30 reservations of 100 from one client over two replicas: 10 fit its share.
	held, refused := reserveFor(t, alice, 30, 100, a, b)
	if len(held) != 10 || refused != 20 {
		t.Fatalf("granted %d, refused %d of 30 × 100 within a share of 1000; want 10 and 20", len(held), refused)
	}
	if n := reached.Load(); n != 1 {
		t.Fatalf("share reached counted %d times, want once", n)
	}
	// Another client is served.
	r, err := a.Reserve(bob, 100)
	if err != nil {
		t.Fatalf("another client: %v", err)
	}
	r.Settle(100)
	// The provider counted less than reserved: the difference is the client's again.
	for _, r := range held {
		r.Settle(50)
	}
	for _, x := range []*budget.Budget{a, b} {
		if err := x.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var spent int64
	if err := db.Pool.QueryRow(ctx, `SELECT sum(spent)::bigint FROM client_shares WHERE kind = 'llm'`).Scan(&spent); err != nil {
		t.Fatal(err)
	}
	if spent != 10*50+100 {
		t.Fatalf("shares hold %d, want %d (settled at the provider's count)", spent, 10*50+100)
	}
	c := budget.New(db.Pool, opts)
	defer c.Close(ctx)
	if _, err := c.Reserve(alice, 500); err != nil {
		t.Fatalf("the settled remainder of the share: %v", err)
	}
	if _, err := c.Reserve(alice, 1); !errors.Is(err, budget.ErrClientShareSpent) {
		t.Fatalf("past the share: %v", err)
	}
	// No client in the context (internal calls): no share applies.
	if _, err := c.Reserve(ctx, 2000); err != nil {
		t.Fatalf("a call for no client: %v", err)
	}
	// The rows name no client: 16 bytes of keyed hash, not the address.
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM client_shares WHERE length(client) <> 16
		OR position('192.0.2.1'::bytea in client) > 0`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d rows carry something else than a 16-byte hash (%v)", n, err)
	}
}

// reserveFor makes n concurrent reservations of tokens under ctx (its client), spread over
// the budgets, and returns those granted and how many its share refused.
func reserveFor(t *testing.T, ctx context.Context, n int, tokens int64, budgets ...*budget.Budget) (held []*budget.Reservation, refused int) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := budgets[i%len(budgets)].Reserve(ctx, tokens)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, budget.ErrClientShareSpent):
				if !errors.Is(err, budget.ErrBudgetExhausted) {
					t.Error("a spent share is not an exhausted budget to callers that ask only that")
				}
				refused++
			case err != nil:
				t.Error(err)
			default:
				held = append(held, r)
			}
		}()
	}
	wg.Wait()
	return held, refused
}

// The paced ceiling: the burst at midnight, half the rest at noon, the limit at the
// day's end; a refusal under the ceiling is ErrPaced, at the limit ErrBudgetExhausted.
func TestPacing(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	midnight := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	var now atomic.Pointer[time.Time]
	set := func(d time.Duration) { t := midnight.Add(d); now.Store(&t) }
	set(0)
	var paced atomic.Int64
	b := budget.New(db.Pool, budget.Options{Kind: "embedding", Limit: 24_000, Pacing: true, Burst: 2400,
		Now: func() time.Time { return *now.Load() }, OnFairUse: func(e string) {
			if e == budget.EventPaced {
				paced.Add(1)
			}
		}})
	defer b.Close(ctx)
	for _, c := range []struct {
		at   time.Duration
		want int64
	}{{0, 2400}, {6 * time.Hour, 2400 + 5400}, {12 * time.Hour, 2400 + 10800}, {24*time.Hour - time.Nanosecond, 23_999}} {
		set(c.at)
		if got := b.Ceiling(); got != c.want {
			t.Errorf("ceiling at %s: %d, want %d", c.at, got, c.want)
		}
	}
	// Spend in steps of 100 at 06:00: stops at the ceiling, paced.
	set(6 * time.Hour)
	var spent int64
	for {
		r, err := b.Reserve(ctx, 100)
		if err != nil {
			if !errors.Is(err, budget.ErrPaced) {
				t.Fatalf("refused under the limit with %v, want ErrPaced", err)
			}
			break
		}
		r.Settle(100)
		spent += 100
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if u := today(t, b); spent > 7800 || spent < 7800-100 || u.Used != spent {
		t.Fatalf("at 06:00 spent %d (used %d), want up to the ceiling 7800", spent, u.Used)
	}
	if paced.Load() != 1 {
		t.Fatalf("paced refusals counted %d, want 1", paced.Load())
	}
	// Later in the day the ceiling has risen.
	set(12 * time.Hour)
	if _, err := b.Reserve(ctx, 5000); err != nil {
		t.Fatalf("at noon: %v", err)
	}
	// At the day's end the limit itself refuses: not paced.
	set(24*time.Hour - time.Second)
	if _, err := b.Reserve(ctx, 24_000-spent-5000+1); err == nil || errors.Is(err, budget.ErrPaced) {
		t.Fatalf("past the limit: %v, want exhausted, not paced", err)
	}
}

// A lease reclaimed from a replica that is still alive (paused past its expiry) is
// charged once: the calls it held settle only what they used beyond the reclaim's charge.
func TestReclaimedLeaseChargesOnce(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	paused := budget.New(db.Pool, budget.Options{Kind: "embedding", Limit: 1000})
	r1, err := paused.Reserve(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := paused.Reserve(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if err := paused.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	granted := today(t, paused).Reserved
	if _, err := db.Pool.Exec(ctx, `UPDATE budget_leases SET expires_at = now() - interval '1 second'`); err != nil {
		t.Fatal(err)
	}
	other := budget.New(db.Pool, budget.Options{Kind: "embedding", Limit: 1000})
	if n, err := other.Reclaim(ctx); err != nil || n != 1 {
		t.Fatalf("reclaimed %d (%v)", n, err)
	}
	// The paused replica wakes and finds its lease gone at its next renewal, while its
	// calls are still out; then they report, one within its reservation, one above.
	paused.RenewDue()
	if err := paused.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	r1.Settle(80)
	r2.Settle(130)
	for _, b := range []*budget.Budget{paused, other} {
		if err := b.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	u := today(t, other)
	if want := granted + 30; u.Used != want || u.Reserved != 0 {
		t.Fatalf("used %d reserved %d; want the reclaimed %d plus the 30 counted beyond a reservation, once", u.Used, u.Reserved, granted)
	}
}

// Pressure: an unlimited budget is never short; a paced one is once less than a quarter
// of the burst is left under the ceiling.
func TestPressure(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	if budget.New(db.Pool, budget.Options{Kind: "llm"}).Pressure() {
		t.Fatal("an unlimited budget under pressure")
	}
	noon := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	b := budget.New(db.Pool, budget.Options{Kind: "llm", Limit: 24_000, Pacing: true, Burst: 2400,
		Now: func() time.Time { return noon }})
	defer b.Close(ctx)
	// The ceiling at noon is 13 200: 700 left is not short, 500 is (under 600).
	for _, c := range []struct {
		spend int64
		short bool
	}{{12_500, false}, {200, true}} {
		r, err := b.Reserve(ctx, c.spend)
		if err != nil {
			t.Fatal(err)
		}
		r.Settle(c.spend)
		if err := b.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		b.ReadPressure()
		if got := b.Pressure(); got != c.short {
			t.Fatalf("after spending %d more: pressure %v, want %v", c.spend, got, c.short)
		}
	}
}
