// Package budget stands in front of every paid call: daily token budgets, shared by all
// replicas, reserved before the call and settled after it, and a ledger of every call,
// with their metrics. The query-embedding cache that spares repeated calls is
// internal/embedcache.
package budget

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sitetools/sitetools/internal/postgres/pgerr"
)

// ErrBudgetExhausted means today's budget cannot cover the call.
var ErrBudgetExhausted = errors.New("daily token budget exhausted")

// Budget is a daily token allowance of one kind ("embedding", "llm"), shared by all
// replicas through PostgreSQL. Reservations are atomic: concurrent calls can never
// reserve more than the limit between them.
type Budget struct {
	pool  *pgxpool.Pool
	kind  string
	limit int64 // tokens per UTC day; 0 means unlimited
	now   func() time.Time
}

// NewBudget returns the budget of kind with limit tokens per UTC day (0: unlimited).
// now is the clock (nil: time.Now).
func NewBudget(pool *pgxpool.Pool, kind string, limit int64, now func() time.Time) *Budget {
	if now == nil {
		now = time.Now
	}
	return &Budget{pool: pool, kind: kind, limit: limit, now: now}
}

// Reservation holds tokens of a budget until the call settles.
type Reservation struct {
	b      *Budget
	day    time.Time
	tokens int64
	done   bool
}

// Reserve holds tokens of today's budget, or returns ErrBudgetExhausted.
func (b *Budget) Reserve(ctx context.Context, tokens int64) (*Reservation, error) {
	day := b.now().UTC().Truncate(24 * time.Hour)
	if b.limit > 0 && tokens > b.limit {
		return nil, ErrBudgetExhausted
	}
	// The row lock of ON CONFLICT DO UPDATE serialises concurrent reservations, and the
	// WHERE refuses one that would cross the limit.
	var reserved int64
	err := b.pool.QueryRow(ctx, `
		INSERT INTO budgets (day, kind, reserved) VALUES ($1, $2, $3)
		ON CONFLICT (day, kind) DO UPDATE SET reserved = budgets.reserved + EXCLUDED.reserved
		WHERE $4 = 0 OR budgets.reserved + budgets.used + EXCLUDED.reserved <= $4
		RETURNING reserved`, day, b.kind, tokens, b.limit).Scan(&reserved)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrBudgetExhausted
	}
	if err != nil {
		return nil, pgerr.Wrap("budget.Reserve", err)
	}
	return &Reservation{b: b, day: day, tokens: tokens}, nil
}

// Settle replaces the reservation with the tokens the provider reported.
func (r *Reservation) Settle(ctx context.Context, used int64) error {
	return r.finish(ctx, used)
}

// Release returns the reserved tokens unused (the call failed before being charged).
func (r *Reservation) Release(ctx context.Context) error {
	return r.finish(ctx, 0)
}

func (r *Reservation) finish(ctx context.Context, used int64) error {
	if r == nil || r.done {
		return nil
	}
	r.done = true
	// Settle even if the caller is gone: the tokens were spent either way.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_, err := r.b.pool.Exec(ctx, `UPDATE budgets SET reserved = greatest(reserved - $3, 0), used = used + $4
		WHERE day = $1 AND kind = $2`, r.day, r.b.kind, r.tokens, used)
	if err != nil {
		return pgerr.Wrap("budget.Settle", err)
	}
	return nil
}

// Usage is one day's state of a budget.
type Usage struct {
	Day      string `json:"day"`
	Kind     string `json:"kind"`
	Limit    int64  `json:"limit"`
	Reserved int64  `json:"reserved"`
	Used     int64  `json:"used"`
}

// Today returns today's usage of the budget.
func (b *Budget) Today(ctx context.Context) (Usage, error) {
	day := b.now().UTC().Truncate(24 * time.Hour)
	u := Usage{Day: day.Format(time.DateOnly), Kind: b.kind, Limit: b.limit}
	err := b.pool.QueryRow(ctx, `SELECT reserved, used FROM budgets WHERE day = $1 AND kind = $2`, day, b.kind).Scan(&u.Reserved, &u.Used)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return u, fmt.Errorf("budget.Today: %w", pgerr.Wrap("query", err))
	}
	return u, nil
}
