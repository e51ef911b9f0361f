// Package budget stands in front of every paid call: daily token budgets, shared by all
// replicas, reserved before the call and settled after it, and a ledger of every call,
// with their metrics. The query-embedding cache that spares repeated calls is
// internal/embedcache.
//
// A budget is one row per UTC day and kind in PostgreSQL (used, reserved). A replica does
// not lock that row for every call: it leases tokens from it (lease.go) and admits calls
// against its lease in memory, so that replicas never queue on one row lock. Every token
// a lease holds counts as reserved in the day's row, so the sum over replicas can never
// pass the limit; a lease that its replica stops renewing (it was killed) is reclaimed by
// any other, charged whole as spent.
package budget

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sitetools/sitetools/internal/clientkey"
	"github.com/sitetools/sitetools/internal/postgres/pgerr"
)

// ErrBudgetExhausted means today's budget cannot cover the call.
var ErrBudgetExhausted = errors.New("daily token budget exhausted")

// Options configure a Budget. Zero values mean the defaults given per field.
type Options struct {
	Kind  string // "embedding" | "llm"
	Limit int64  // tokens per UTC day; 0 means unlimited
	// PricePerMTok prices the ledger row of a reclaimed lease (USD per million tokens).
	PricePerMTok float64
	// Now is the clock that says which day it is (nil: time.Now).
	Now func() time.Time
	// LeaseTTL is how long a replica's lease outlives its last renewal (default 30s);
	// a live replica renews it every LeaseTTL/3 while it holds tokens.
	LeaseTTL time.Duration
	Logger   *slog.Logger // nil discards

	// ClientShare is what one client may spend of the day (0: no share); ClientSecret
	// keys the hash that names clients in the database (see fairuse.go). A reservation
	// whose context names no client (WithClient) is charged to no share.
	ClientShare  int64
	ClientSecret []byte
	// Pacing releases the day's limit over the day: Burst tokens at midnight UTC, the
	// rest linearly until the day's end (see fairuse.go).
	Pacing bool
	Burst  int64
	// OnFairUse is told of fair-use events (EventShareReached, EventPaced); nil: none.
	OnFairUse func(event string)
}

// DefaultLeaseTTL is how long a lease outlives its replica's last renewal.
const DefaultLeaseTTL = 30 * time.Second

// Budget is a daily token allowance of one kind, shared by all replicas through
// PostgreSQL. It is safe for concurrent use.
type Budget struct {
	pool    *pgxpool.Pool
	opts    Options
	clients *clientkey.Hasher // names clients in client_shares
	holder  string
	ratios  ratios

	growMu sync.Mutex // one lease write of this budget at a time
	mu     sync.Mutex // the fields below
	leases map[time.Time]*lease
	// flushing says a flusher goroutine runs; dirty that it has work; closing that
	// Close asked it to return every token it can.
	flushing, dirty, closing bool
	wake                     chan struct{}
	wg                       sync.WaitGroup
	lastErr                  time.Time // of the last logged flush failure

	shareMu     sync.Mutex
	shareWG     sync.WaitGroup // share corrections under way
	shareClosed bool           // Close waits for them: corrections from now on are made at once
	press       pressure
}

// New returns the budget opts describe on pool. It contacts nothing until a reservation.
func New(pool *pgxpool.Pool, opts Options) *Budget {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = DefaultLeaseTTL
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	host, _ := os.Hostname()
	return &Budget{
		// Without a secret, one per process: shares then hold per replica.
		pool: pool, opts: opts, clients: clientkey.New(opts.ClientSecret), holder: fmt.Sprintf("%s:%d", host, os.Getpid()),
		leases: map[time.Time]*lease{}, wake: make(chan struct{}, 1),
	}
}

// NewBudget returns the budget of kind with limit tokens per UTC day (0: unlimited).
// now is the clock (nil: time.Now).
func NewBudget(pool *pgxpool.Pool, kind string, limit int64, now func() time.Time) *Budget {
	return New(pool, Options{Kind: kind, Limit: limit, Now: now})
}

// Kind is the budget's kind.
func (b *Budget) Kind() string { return b.opts.Kind }

// Reservation holds tokens of a budget until the call settles.
type Reservation struct {
	b      *Budget
	l      *lease
	tokens int64 // what it reserves: charged when its delivery is unknown
	// held is what it holds of its lease while in flight: at least tokens, more for a
	// call that may count more than it reserves (ReserveHolding).
	held    int64
	expires time.Time // its call's deadline plus a margin
	done    bool      // guarded by b.mu
	// prepaid is what a reclaim of its lease already charged as spent, its hold
	// (guarded by b.mu): settling charges only what the call used beyond it.
	prepaid int64
	share   *share // its charge to its client's share; nil: none
}

// reservationMargin is how long after its call's deadline an unsettled reservation is
// charged as spent by the replica itself; callDefault is the deadline assumed for a
// call without one.
const (
	reservationMargin = 10 * time.Second
	callDefault       = 2 * time.Minute
)

// Reserve holds tokens of today's budget, or returns ErrBudgetExhausted. The
// reservation's lease ends at ctx's deadline plus a margin: a call still unsettled then
// is charged as spent.
func (b *Budget) Reserve(ctx context.Context, tokens int64) (*Reservation, error) {
	return b.ReserveHolding(ctx, tokens, tokens)
}

// ReserveHolding reserves tokens as Reserve does, and holds hold tokens of today's budget
// (at least tokens) until the call settles: what the call may cost if its provider
// counts more than the reservation expects (Hold, and ratio.go on the bound it gives).
// The call is charged what it reports, or tokens when its delivery is unknown; a
// client's share is charged tokens.
func (b *Budget) ReserveHolding(ctx context.Context, tokens, hold int64) (*Reservation, error) {
	tokens = max(tokens, 0)
	hold = max(hold, tokens)
	if b.opts.Limit > 0 && hold > b.opts.Limit {
		return nil, ErrBudgetExhausted
	}
	expires := time.Now().Add(callDefault)
	if d, ok := ctx.Deadline(); ok {
		expires = d
	}
	r := &Reservation{b: b, expires: expires.Add(reservationMargin)}
	day := b.today()
	sh, err := b.takeShare(ctx, day, nil, tokens)
	if err != nil {
		return nil, err
	}
	r.share = sh
	if err := b.take(ctx, day, r, tokens, hold); err != nil {
		b.settleShare(sh, 0)
		return nil, err
	}
	return r, nil
}

// Extend adds tokens to the reservation, for another request of the same call (a
// retry), or returns ErrBudgetExhausted and leaves it as it was.
func (r *Reservation) Extend(ctx context.Context, tokens int64) error {
	return r.ExtendHolding(ctx, tokens, tokens)
}

// ExtendHolding is Extend for a reservation made with ReserveHolding: tokens more
// reserved, hold more held.
func (r *Reservation) ExtendHolding(ctx context.Context, tokens, hold int64) error {
	r.b.mu.Lock()
	done, day := r.done, r.l.day
	r.b.mu.Unlock()
	if done {
		return errors.New("budget: extending a settled reservation")
	}
	tokens = max(tokens, 0)
	hold = max(hold, tokens)
	if r.share != nil {
		before := r.share.tokens
		if _, err := r.b.takeShare(ctx, day, r.share, tokens); err != nil {
			return err
		}
		if err := r.b.take(ctx, day, r, tokens, hold); err != nil {
			r.b.settleShare(&share{day: r.share.day, client: r.share.client, tokens: r.share.tokens - before}, 0)
			r.share.tokens = before
			return err
		}
		return nil
	}
	return r.b.take(ctx, day, r, tokens, hold)
}

// Tokens is what the reservation holds.
func (r *Reservation) Tokens() int64 {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	return r.tokens
}

// Settle replaces the reservation with the tokens the provider reported (or, for
// requests that may have reached it unanswered, what they were reserved at). More
// than was reserved is charged too: the provider bills what it counts.
func (r *Reservation) Settle(used int64) { r.finish(max(used, 0)) }

// Release returns the reserved tokens unused: the call provably never reached the
// provider, or the provider refused it.
func (r *Reservation) Release() { r.finish(0) }

// Unknown charges the reservation whole: the call may have reached the provider and
// nothing says what it counted (it timed out, was cancelled after being sent, the
// connection was reset, or the provider answered 5xx).
func (r *Reservation) Unknown() {
	if r == nil {
		return
	}
	r.finish(r.Tokens())
}

func (r *Reservation) finish(used int64) {
	if r == nil {
		return
	}
	b := r.b
	b.mu.Lock()
	if r.done {
		b.mu.Unlock()
		return
	}
	r.done = true
	r.l.held -= r.held
	r.l.pending += max(used-r.prepaid, 0)
	delete(r.l.calls, r)
	b.kickLocked()
	b.mu.Unlock()
	b.settleShare(r.share, used)
}

func (b *Budget) today() time.Time { return b.opts.Now().UTC().Truncate(24 * time.Hour) }

// Usage is one day's state of a budget.
type Usage struct {
	Day      string `json:"day"`
	Kind     string `json:"kind"`
	Limit    int64  `json:"limit"`
	Reserved int64  `json:"reserved"`
	Used     int64  `json:"used"`
	// PacedCeiling is how much of the day may be spent or leased by now: the limit
	// without pacing, 0 for an unlimited budget.
	PacedCeiling int64 `json:"pacedCeiling"`
	Pacing       bool  `json:"pacing"`
	// ClientShare is what one client may spend of the day (0: no share);
	// ClientsAtShare how many clients reached it today.
	ClientShare    int64 `json:"clientShare"`
	ClientsAtShare int64 `json:"clientsAtShare"`
}

// Today returns today's usage of the budget as PostgreSQL has it: settled spend reaches
// it within a fraction of a second (Flush makes it now).
func (b *Budget) Today(ctx context.Context) (Usage, error) {
	day := b.today()
	u := Usage{Day: day.Format(time.DateOnly), Kind: b.opts.Kind, Limit: b.opts.Limit,
		PacedCeiling: b.ceiling(day, b.opts.Now()), Pacing: b.opts.Pacing && b.opts.Limit > 0, ClientShare: b.opts.ClientShare}
	err := b.pool.QueryRow(ctx, `SELECT coalesce(b.reserved, 0), coalesce(b.used, 0),
		(SELECT count(*) FROM client_shares WHERE day = $1 AND kind = $2 AND reached)
		FROM (SELECT 1) one LEFT JOIN budgets b ON b.day = $1 AND b.kind = $2`, day, b.opts.Kind).Scan(&u.Reserved, &u.Used, &u.ClientsAtShare)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return u, fmt.Errorf("budget.Today: %w", pgerr.Wrap("query", err))
	}
	return u, nil
}
