package budget_test

import (
	"context"
	"sync"
	"testing"

	"github.com/sitetools/sitetools/internal/budget"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
)

// A call in flight holds its estimate × max(8, 2 × the highest ratio reported lately),
// never less than its reservation, and a lower report does not shrink it.
func TestHoldIsSizedByThePeakRatio(t *testing.T) {
	b := budget.NewBudget(nil, "embedding", 0, nil)
	for _, step := range []struct {
		name          string
		learn         [2]int64 // estimate, reported; none when 0
		model         string
		size, holdFor int64 // Size and Hold of an estimate of 10
	}{
		{name: "before any report", model: "m", size: 80, holdFor: 80},
		{name: "3×: the floor of 8", learn: [2]int64{10, 30}, model: "m", size: 38, holdFor: 80},
		{name: "6×: twice the ratio", learn: [2]int64{10, 60}, model: "m", size: 75, holdFor: 120},
		{name: "1× after 6×: the peak holds", learn: [2]int64{10, 10}, model: "m", size: 69, holdFor: 120},
		{name: "another model", model: "other", size: 80, holdFor: 80},
	} {
		if step.learn[0] > 0 {
			b.Learn(step.model, step.learn[0], step.learn[1])
		}
		if got := b.Size(step.model, 10); got != step.size {
			t.Errorf("%s: Size %d, want %d", step.name, got, step.size)
		}
		if got := b.Hold(step.model, 10); got != step.holdFor {
			t.Errorf("%s: Hold %d, want %d", step.name, got, step.holdFor)
		}
	}
}

// The count jumps from 3 to 8 tokens a word while calls are in flight. Two replicas with
// a day of 200 tokens admit calls of four words (estimate 5) sized by the learned ratio
// (2.4): reserved at Size + 8 and holding Hold + 8, at most as many are admitted at once
// as the day can pay at 8 × the estimate, and settled at the new count (32) the day
// stays within its limit. Held at their reservation only, as before, the same calls
// take the day to 256.
func TestHoldBoundsACountThatJumps(t *testing.T) {
	for _, tc := range []struct {
		name     string
		holding  bool
		overshot bool
	}{
		{name: "held at max(8, 2 × ratio)", holding: true},
		{name: "held at the reservation", overshot: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := pgtest.NewDB(t)
			ctx := context.Background()
			replicas := []*budget.Budget{budget.NewBudget(db.Pool, "embedding", 200, nil), budget.NewBudget(db.Pool, "embedding", 200, nil)}
			var mu sync.Mutex
			var admitted []*budget.Reservation
			var wg sync.WaitGroup
			for i := range 16 {
				b := replicas[i%2]
				b.Learn("m", 5, 12)
				per, hold := b.Size("m", 5)+8, b.Hold("m", 5)+8
				if !tc.holding {
					hold = per
				}
				wg.Go(func() {
					r, err := b.ReserveHolding(ctx, per, hold)
					if err != nil {
						return // over the limit: the search degrades
					}
					mu.Lock()
					admitted = append(admitted, r)
					mu.Unlock()
				})
			}
			wg.Wait()
			for _, r := range admitted {
				r.Settle(32)
			}
			for _, b := range replicas {
				if err := b.Close(ctx); err != nil {
					t.Fatal(err)
				}
			}
			u := today(t, replicas[0])
			t.Logf("%d calls admitted at once, used %d of 200", len(admitted), u.Used)
			if len(admitted) == 0 || u.Used != 32*int64(len(admitted)) || u.Reserved != 0 {
				t.Fatalf("%d calls admitted, the day %+v; want some, each charged 32, none reserved", len(admitted), u)
			}
			if overshot := u.Used > 200; overshot != tc.overshot {
				t.Errorf("used %d of 200: past the limit %v, want %v", u.Used, overshot, tc.overshot)
			}
		})
	}
}

// A call holding more than it reserves is charged its reservation when its delivery is
// unknown, and gives its whole hold back when released.
func TestHoldingOutcomesCharge(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	b := budget.NewBudget(db.Pool, "embedding", 100, nil)
	unknown, err := b.ReserveHolding(ctx, 20, 60)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.ReserveHolding(ctx, 20, 60); err != budget.ErrBudgetExhausted {
		t.Fatalf("a second hold of 60 within 100: %v, want the budget exhausted", err)
	}
	if got := unknown.Tokens(); got != 20 {
		t.Fatalf("Tokens %d, want the reservation of 20", got)
	}
	unknown.Unknown()
	released, err := b.ReserveHolding(ctx, 20, 60)
	if err != nil {
		t.Fatalf("after the first settled at 20: %v", err)
	}
	if err := released.ExtendHolding(ctx, 5, 30); err != budget.ErrBudgetExhausted {
		t.Fatalf("extending a hold of 60 by 30 with 80 left: %v, want the budget exhausted", err)
	}
	if err := released.ExtendHolding(ctx, 5, 15); err != nil {
		t.Fatalf("extending by 15 with 80 left: %v", err)
	}
	released.Release()
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if u := today(t, b); u.Used != 20 || u.Reserved != 0 {
		t.Fatalf("the day %+v, want used 20 (the unknown call's reservation), nothing reserved", u)
	}
}
