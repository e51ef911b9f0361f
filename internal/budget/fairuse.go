package budget

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sitetools/sitetools/internal/postgres/pgerr"
)

// Fair use keeps one visitor, or many, from spending everyone's day. Two rules stand
// beside the daily limit, both held in PostgreSQL so that they hold across replicas:
//
//   - A client's share: one client (the rate limit's key: an address, an IPv6 /64) may
//     spend at most ClientShare tokens of the day. A call is charged to its client's row
//     in client_shares at its reservation before it is made and corrected to what the
//     provider counted after it, so a client never has more in flight than its share
//     left. The row names the client by a keyed hash only (see sharePurpose).
//   - Pacing: the day's budget is released over the day. At t hours after midnight UTC
//     the day may have spent or leased at most
//
//         ceiling(t) = burst + (limit − burst) × t / 24
//
//     so many clients, each inside its share, cannot spend the day before noon: at noon
//     at most burst + half the rest has gone. The ceiling takes the place of the limit
//     where a replica leases tokens from the day (growSQL).
//
// A call either rule refuses gets ErrClientShareSpent or ErrPaced; both are
// ErrBudgetExhausted to a caller that only asks that (the search degrades to full-text
// and the chat answers retrieval-only), and say which to a caller that asks.

// ErrClientShareSpent means the calling client has spent its share of today's budget;
// everyone else may still be served. It is an ErrBudgetExhausted.
var ErrClientShareSpent = fmt.Errorf("%w: this client's daily share is spent", ErrBudgetExhausted)

// ErrPaced means the budget's paced ceiling refuses the call now; it is released
// further as the day goes on. It is an ErrBudgetExhausted.
var ErrPaced = fmt.Errorf("%w for now: the day's budget is released over the day", ErrBudgetExhausted)

// Fair-use events, passed to Options.OnFairUse.
const (
	EventShareReached = "share_reached" // a client reached its share (once per client, day and kind, on any replica)
	EventPaced        = "paced"         // the paced ceiling refused a call
)

type clientCtxKey struct{}

// WithClient returns ctx carrying the client a paid call is made for: its rate-limit key
// (an address or an IPv6 network, as the rate limit keys it). Budgets with a client share
// charge reservations made under ctx to that client. The key stays in memory; only its
// keyed hash reaches the database.
func WithClient(ctx context.Context, client string) context.Context {
	if client == "" {
		return ctx
	}
	return context.WithValue(ctx, clientCtxKey{}, client)
}

func clientOf(ctx context.Context) string {
	s, _ := ctx.Value(clientCtxKey{}).(string)
	return s
}

// sharePurpose is what names a client in client_shares (see clientkey.Hasher.Key): a
// keyed hash under a key of the day, which the secret not in the database derives, so
// a dump cannot be matched against guessed addresses, and yesterday's rows (dropped
// anyway) do not link to today's.
const sharePurpose = "sitetools client share"

// shareTakeSQL charges $4 tokens to client $3's share of day $1 and kind $2 if its spend
// stays within the share $5; otherwise it marks the row reached. It returns whether the
// tokens were taken and whether this call is the one that marked the share reached.
const shareTakeSQL = `
WITH took AS (
	INSERT INTO client_shares AS s (day, kind, client, spent) SELECT $1, $2, $3, $4 WHERE $4::bigint <= $5::bigint
	ON CONFLICT (day, kind, client) DO UPDATE SET spent = s.spent + EXCLUDED.spent
	WHERE s.spent + EXCLUDED.spent <= $5::bigint
	RETURNING 1
), mark AS (
	INSERT INTO client_shares AS s (day, kind, client, reached) SELECT $1, $2, $3, true WHERE NOT EXISTS (SELECT 1 FROM took)
	ON CONFLICT (day, kind, client) DO UPDATE SET reached = true WHERE NOT s.reached
	RETURNING 1
)
SELECT EXISTS (SELECT 1 FROM took), EXISTS (SELECT 1 FROM mark)`

// share is one reservation's charge to its client's share.
type share struct {
	day    time.Time
	client []byte
	tokens int64 // charged to the share so far
}

// takeShare charges tokens to the share of ctx's client; nil when the budget has no
// share or ctx names no client.
func (b *Budget) takeShare(ctx context.Context, day time.Time, s *share, tokens int64) (*share, error) {
	if b.opts.ClientShare <= 0 {
		return s, nil
	}
	if s == nil {
		client := clientOf(ctx)
		if client == "" {
			return nil, nil
		}
		s = &share{day: day, client: b.clients.Key(sharePurpose, day, client)}
	}
	var took, marked bool
	if err := b.pool.QueryRow(ctx, shareTakeSQL, s.day, b.opts.Kind, s.client, tokens, b.opts.ClientShare).Scan(&took, &marked); err != nil {
		return s, pgerr.Wrap("budget.Reserve: client share", err)
	}
	if marked {
		b.event(EventShareReached)
	}
	if !took {
		return s, ErrClientShareSpent
	}
	s.tokens += tokens
	return s, nil
}

// settleShare corrects the share by what the call used against what it reserved, off
// the caller's path (Close waits for it).
func (b *Budget) settleShare(s *share, used int64) {
	if s == nil || used == s.tokens {
		return
	}
	correct := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := b.pool.Exec(ctx, `UPDATE client_shares SET spent = greatest(spent + $4, 0) WHERE day = $1 AND kind = $2 AND client = $3`,
			s.day, b.opts.Kind, s.client, used-s.tokens); err != nil {
			b.opts.Logger.Warn("client share correction failed; the share keeps the reservation", "kind", b.opts.Kind, "err", err.Error())
		}
	}
	b.shareMu.Lock()
	if b.shareClosed {
		b.shareMu.Unlock()
		correct()
		return
	}
	b.shareWG.Add(1)
	b.shareMu.Unlock()
	go func() {
		defer b.shareWG.Done()
		correct()
	}()
}

// waitShares waits for the share corrections under way; later ones are made at once.
func (b *Budget) waitShares() {
	b.shareMu.Lock()
	b.shareClosed = true
	b.shareMu.Unlock()
	b.shareWG.Wait()
}

// ceiling is how much of day's budget may be spent or leased at now: the limit, or
// under pacing the burst plus the limit's rest released linearly over the day; 0 for an
// unlimited budget.
func (b *Budget) ceiling(day, now time.Time) int64 {
	limit := b.opts.Limit
	if limit <= 0 || !b.opts.Pacing {
		return limit
	}
	elapsed := now.Sub(day)
	if elapsed >= 24*time.Hour || now.Before(day) {
		return limit
	}
	burst := min(max(b.opts.Burst, 0), limit)
	// At least one token: a ceiling of 0 would read as unlimited.
	return max(burst+int64(float64(limit-burst)*elapsed.Seconds()/86400), 1)
}

// Ceiling is today's paced ceiling now (the limit without pacing; 0: unlimited).
func (b *Budget) Ceiling() int64 { return b.ceiling(b.today(), b.opts.Now()) }

// ClientShare is what one client may spend of the day (0: no share).
func (b *Budget) ClientShare() int64 { return b.opts.ClientShare }

// pacedRefusal tells a refusal by the ceiling from one by the limit: the day had room
// under its limit for need tokens. It counts the event.
func (b *Budget) pacedRefusal(ctx context.Context, day time.Time, need int64) error {
	if !b.opts.Pacing || b.opts.Limit <= 0 {
		return ErrBudgetExhausted
	}
	spent, err := b.spent(ctx, day)
	if err != nil || spent+need > b.opts.Limit {
		return ErrBudgetExhausted
	}
	b.event(EventPaced)
	return ErrPaced
}

// spent is what day's row has used and leased (0 without a row).
func (b *Budget) spent(ctx context.Context, day time.Time) (int64, error) {
	var n int64
	err := b.pool.QueryRow(ctx, `SELECT coalesce((SELECT used + reserved FROM budgets WHERE day = $1 AND kind = $2), 0)`, day, b.opts.Kind).Scan(&n)
	return n, err
}

func (b *Budget) event(what string) {
	if b.opts.OnFairUse != nil {
		b.opts.OnFairUse(what)
	}
}

// pressure is the cached answer of Pressure.
type pressure struct {
	mu      sync.Mutex
	at      time.Time
	short   bool
	reading bool
}

// pressureEvery is how often Pressure reads the day's row at most.
const pressureEvery = time.Second

// Pressure says the paced budget is running short: less than a quarter of the burst
// allowance is left under the ceiling (or, without pacing, under a twentieth of the
// limit). It answers from a reading at most a second old and reads again in the
// background, so that it never holds up a request; an unlimited budget is never short.
func (b *Budget) Pressure() bool {
	if b.opts.Limit <= 0 {
		return false
	}
	p := &b.press
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.at) >= pressureEvery && !p.reading {
		p.reading = true
		go b.readPressure()
	}
	return p.short
}

func (b *Budget) readPressure() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	day := b.today()
	spent, err := b.spent(ctx, day)
	margin := b.opts.Limit / 20
	if b.opts.Pacing {
		margin = max(b.opts.Burst/4, 1)
	}
	p := &b.press
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reading = false
	if err != nil && !errors.Is(err, context.Canceled) {
		return // keep the last reading; the next call tries again
	}
	p.at = time.Now()
	p.short = b.ceiling(day, b.opts.Now())-spent < margin
}
