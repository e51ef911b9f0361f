package budget

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sitetools/sitetools/internal/postgres/pgerr"
)

// lease is this replica's share of one day's budget. Every token of granted is counted
// in the day's reserved in PostgreSQL; in memory it is split into pending (settled
// spend not yet moved to the day's used), held (calls in flight) and the free rest.
// Settling for more than was held (a provider that counts more than reserved) can make
// the free rest negative: the next reservation then takes the difference from the day
// first.
type lease struct {
	day     time.Time
	id      int64 // its row in budget_leases; 0: none
	granted int64
	pending int64
	held    int64
	calls   map[*Reservation]struct{}
	// demand is the tokens reserved in the current and the previous second (second is
	// the Unix second of demand[0]): a lease keeps about that much free.
	demand   [2]int64
	second   int64
	reserved time.Time // when a call last reserved from it
	renewed  time.Time
}

func (l *lease) free() int64 { return l.granted - l.pending - l.held }

// note counts tokens reserved now in the lease's demand.
func (l *lease) note(tokens int64, now time.Time) {
	switch s := now.Unix(); {
	case s == l.second:
	case s == l.second+1:
		l.demand, l.second = [2]int64{0, l.demand[0]}, s
	default:
		l.demand, l.second = [2]int64{}, s
	}
	l.demand[0] += tokens
	if tokens > 0 {
		l.reserved = now
	}
}

// recent is about a second's worth of the lease's demand; none once no call reserved
// for an idle spell.
func (l *lease) recent(now time.Time) int64 {
	if now.Sub(l.reserved) > idleAfter {
		return 0
	}
	l.note(0, now)
	return max(l.demand[0], l.demand[1])
}

// idleAfter is how long a lease keeps free tokens after its last reservation.
const idleAfter = 250 * time.Millisecond

// lost forgets a lease that another replica reclaimed: it charged all of granted, the
// spend pending here and the calls still held included. Those calls settle into a new
// lease, charging only what they use beyond what the reclaim charged for them (a
// replica paused past its lease's expiry, by a long GC pause or a frozen VM, is charged
// once for each call). b.mu held.
func (l *lease) lost() {
	for r := range l.calls {
		r.prepaid = r.held
	}
	l.id, l.granted, l.pending = 0, 0, 0
}

// leaseOf returns the lease of day, made if need be; b.mu held.
func (b *Budget) leaseOf(day time.Time) *lease {
	l := b.leases[day]
	if l == nil {
		l = &lease{day: day, calls: map[*Reservation]struct{}{}}
		b.leases[day] = l
	}
	return l
}

// tryTake adds tokens to r's reservation and hold to what it holds, if the lease of day
// has hold tokens free.
func (b *Budget) tryTake(day time.Time, r *Reservation, tokens, hold int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.leaseOf(day)
	if l.free() < hold {
		return false
	}
	l.held += hold
	l.note(hold, time.Now())
	r.l, r.tokens, r.held = l, r.tokens+tokens, r.held+hold
	l.calls[r] = struct{}{}
	return true
}

// take adds tokens to r's reservation and hold to what it holds on the lease of day,
// first growing the lease from the day's budget if its free part is too small, and
// reclaiming expired leases of other replicas once if the day has no room.
func (b *Budget) take(ctx context.Context, day time.Time, r *Reservation, tokens, hold int64) error {
	if b.tryTake(day, r, tokens, hold) {
		return nil
	}
	b.growMu.Lock()
	defer b.growMu.Unlock()
	reclaimed := false
	for range 4 {
		if b.tryTake(day, r, tokens, hold) {
			return nil
		}
		b.mu.Lock()
		l := b.leaseOf(day)
		need := hold - l.free()
		want := need + b.extra(l)
		id := l.id
		b.mu.Unlock()
		got, newID, err := b.grow(ctx, day, id, need, want)
		if errors.Is(err, ErrBudgetExhausted) && reclaimed {
			return b.pacedRefusal(ctx, day, need)
		}
		switch {
		case errors.Is(err, errLeaseGone):
			b.mu.Lock()
			l.lost()
			b.mu.Unlock()
			continue
		case errors.Is(err, ErrBudgetExhausted) && !reclaimed:
			reclaimed = true
			if n, rerr := b.Reclaim(ctx); rerr != nil || n == 0 {
				return b.pacedRefusal(ctx, day, need)
			}
			continue
		case err != nil:
			return err
		}
		b.mu.Lock()
		l.id, l.granted, l.renewed = newID, l.granted+got, time.Now()
		b.kickLocked() // the flusher renews the lease and gives back what stays idle
		b.mu.Unlock()
	}
	if b.tryTake(day, r, tokens, hold) {
		return nil
	}
	return ErrBudgetExhausted
}

// extra is what a lease takes beyond its need: about a second of its own demand, and
// for a limited budget at most a 32nd of the limit (the grow statement also leaves 7/8
// of the day's remaining room to the others); none when closing. b.mu held.
func (b *Budget) extra(l *lease) int64 {
	if b.closing {
		return 0
	}
	e := l.recent(time.Now())
	if b.opts.Limit > 0 {
		e = min(e, b.opts.Limit/32)
	}
	return e
}

var errLeaseGone = errors.New("budget: the lease was reclaimed")

// growSQL takes between need ($3) and want ($4) tokens from the day's budget for lease
// $6 (0: a new lease of holder $7), renewing it for $8 seconds, if the day has need
// tokens left under its limit ($5, 0: none). It grants at most need plus an eighth of
// what would remain, so that one replica never takes the others' share. It returns the
// tokens granted (-1: none) and the lease's id, and whether lease $6 still exists.
const growSQL = `
WITH cur AS (
	SELECT CASE WHEN $5::bigint = 0 THEN $4::bigint
	            ELSE least($4::bigint, $3::bigint + greatest(($5::bigint - used - reserved - $3::bigint) / 8, 0)) END AS g,
	       ($5::bigint = 0 OR used + reserved + $3::bigint <= $5::bigint) AS fits
	FROM budgets WHERE day = $1 AND kind = $2 FOR UPDATE
), live AS (
	SELECT ($6::bigint = 0 OR EXISTS (SELECT 1 FROM budget_leases WHERE id = $6::bigint)) AS ok
), b AS (
	UPDATE budgets SET reserved = budgets.reserved + cur.g FROM cur, live
	WHERE budgets.day = $1 AND budgets.kind = $2 AND cur.fits AND live.ok
	RETURNING cur.g
), created AS (
	INSERT INTO budget_leases (day, kind, holder, granted, expires_at)
	SELECT $1, $2, $7, b.g, now() + make_interval(secs => $8) FROM b WHERE $6::bigint = 0
	RETURNING id
), renewed AS (
	UPDATE budget_leases SET granted = budget_leases.granted + b.g, expires_at = now() + make_interval(secs => $8)
	FROM b WHERE budget_leases.id = $6::bigint AND $6::bigint <> 0
	RETURNING budget_leases.id
)
SELECT coalesce((SELECT g FROM b), -1), coalesce((SELECT id FROM created), (SELECT id FROM renewed), 0), (SELECT ok FROM live)`

// grow takes need to want tokens from the day's budget into lease id (0: a new one).
func (b *Budget) grow(ctx context.Context, day time.Time, id, need, want int64) (got, newID int64, err error) {
	if id == 0 {
		if _, err := b.pool.Exec(ctx, `INSERT INTO budgets (day, kind) VALUES ($1, $2) ON CONFLICT DO NOTHING`, day, b.opts.Kind); err != nil {
			return 0, 0, pgerr.Wrap("budget.Reserve", err)
		}
	}
	var live bool
	// Under pacing the ceiling stands in for the limit: nothing past it is leased.
	err = b.pool.QueryRow(ctx, growSQL, day, b.opts.Kind, need, want, b.ceiling(day, b.opts.Now()), id, b.holder,
		b.opts.LeaseTTL.Seconds()).Scan(&got, &newID, &live)
	switch {
	case err != nil:
		return 0, 0, pgerr.Wrap("budget.Reserve", err)
	case !live:
		return 0, 0, errLeaseGone
	case got < 0:
		return 0, 0, ErrBudgetExhausted
	}
	return got, newID, nil
}

// flushSQL moves $4 tokens of spend into the day's used and $5 tokens off lease $3 and
// the day's reserved, renewing the lease for $6 seconds; endSQL does the same and
// deletes the lease. Neither changes anything once the lease is gone (reclaimed: its
// tokens were charged whole), and then neither returns a row.
const (
	flushSQL = `
WITH l AS (
	UPDATE budget_leases SET granted = greatest(granted - $5, 0), expires_at = now() + make_interval(secs => $6)
	WHERE id = $3 RETURNING id
)
UPDATE budgets SET used = used + $4, reserved = greatest(reserved - $5, 0) FROM l
WHERE day = $1 AND kind = $2 RETURNING l.id`
	endSQL = `
WITH l AS (DELETE FROM budget_leases WHERE id = $3 RETURNING id)
UPDATE budgets SET used = used + $4, reserved = greatest(reserved - $5, 0) FROM l
WHERE day = $1 AND kind = $2 RETURNING l.id`
	// spendSQL charges spend settled after its lease was lost.
	spendSQL = `UPDATE budgets SET used = used + $3 WHERE day = $1 AND kind = $2`
)

// flushLease moves the lease's pending spend to the day's used, gives back free tokens
// beyond about a second of its demand (all of them when idle or closing), ends the lease
// when it holds nothing, and renews it when it is due. It charges a reservation whose
// call outlived its deadline by the margin. b.growMu held.
func (b *Budget) flushLease(ctx context.Context, l *lease) error {
	now := time.Now()
	b.mu.Lock()
	b.expireLocked(l, now)
	pending := l.pending
	ret := max(l.free()-b.extra(l), 0)
	moved := min(pending+ret, l.granted)
	end := l.id != 0 && l.held == 0 && l.granted == moved
	renew := l.id != 0 && now.Sub(l.renewed) >= b.opts.LeaseTTL/3
	if pending == 0 && moved == 0 && !renew {
		b.mu.Unlock()
		return nil
	}
	id := l.id
	l.pending -= pending
	l.granted -= moved
	b.mu.Unlock()

	var err error
	applied := true
	switch {
	case id == 0:
		_, err = b.pool.Exec(ctx, spendSQL, l.day, b.opts.Kind, pending)
	case end:
		err = b.pool.QueryRow(ctx, endSQL, l.day, b.opts.Kind, id, pending, moved).Scan(&id)
	default:
		err = b.pool.QueryRow(ctx, flushSQL, l.day, b.opts.Kind, id, pending, moved, b.opts.LeaseTTL.Seconds()).Scan(&id)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		applied, err = false, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case err != nil:
		l.pending += pending
		l.granted += moved
		return pgerr.Wrap("budget.flush", err)
	case !applied:
		l.lost()
	case end:
		l.id = 0
	default:
		l.renewed = now
	}
	if l.id == 0 && l.held == 0 && l.pending == 0 && l.day.Before(b.today()) {
		delete(b.leases, l.day)
	}
	return nil
}

// expireLocked charges as spent every reservation of l whose call outlived its
// deadline by the margin: a call that never settled may have been served. b.mu held.
func (b *Budget) expireLocked(l *lease, now time.Time) {
	for r := range l.calls {
		if now.After(r.expires) {
			r.done = true
			l.held -= r.held
			l.pending += max(r.tokens-r.prepaid, 0)
			delete(l.calls, r)
			b.opts.Logger.Warn("a budget reservation outlived its call; charged as spent", "kind", b.opts.Kind, "tokens", r.tokens)
		}
	}
}

// Flush moves every lease's settled spend to PostgreSQL now and gives back what the
// leases do not need (tests and reports; a background flusher does it within a fraction
// of a second anyway).
func (b *Budget) Flush(ctx context.Context) error {
	b.growMu.Lock()
	defer b.growMu.Unlock()
	return b.flushAll(ctx)
}

// flushAll flushes every lease; b.growMu held.
func (b *Budget) flushAll(ctx context.Context) error {
	b.mu.Lock()
	leases := make([]*lease, 0, len(b.leases))
	for _, l := range b.leases {
		leases = append(leases, l)
	}
	b.mu.Unlock()
	first := b.storeRatios(ctx)
	for _, l := range leases {
		if err := b.flushLease(ctx, l); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Timing of the flusher: soon after a settlement, at most every flushGap; otherwise
// every tick while a lease is held, to renew it and give back what is idle.
const (
	flushGap  = 50 * time.Millisecond
	flushTick = idleAfter
)

// kickLocked makes sure a flusher runs; b.mu held.
func (b *Budget) kickLocked() {
	b.dirty = true
	if b.flushing {
		return
	}
	b.flushing = true
	b.wg.Add(1)
	go b.flusher()
}

// flusher runs while this budget has something to write: spend to move, leases to
// renew or give back. It ends once no lease is held.
func (b *Budget) flusher() {
	defer b.wg.Done()
	for {
		b.mu.Lock()
		busy := b.dirty
		held := false
		for _, l := range b.leases {
			held = held || l.id != 0 || l.pending > 0 || l.held > 0
		}
		if !busy && !held {
			b.flushing = false
			b.mu.Unlock()
			return
		}
		b.dirty = false
		closing := b.closing
		b.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := b.Flush(ctx)
		cancel()
		b.logFlush(err)
		if closing {
			b.mu.Lock()
			b.flushing = false
			b.mu.Unlock()
			return
		}
		wait := flushTick
		if busy {
			wait = flushGap
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-b.wake:
			timer.Stop()
		}
	}
}

// logFlush logs a failed flush, at most once a minute: the spend stays pending and the
// next flush retries it.
func (b *Budget) logFlush(err error) {
	if err == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if time.Since(b.lastErr) < time.Minute {
		return
	}
	b.lastErr = time.Now()
	b.opts.Logger.LogAttrs(context.Background(), slog.LevelWarn, "budget flush failed; retrying",
		slog.String("kind", b.opts.Kind), slog.String("err", err.Error()))
}

// Close writes what is pending and gives back every token not held by a call, ending
// the leases; a lease still holding calls is left to expire and be reclaimed.
func (b *Budget) Close(ctx context.Context) error {
	b.mu.Lock()
	b.closing = true
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
	b.wg.Wait()
	b.waitShares()
	return b.Flush(ctx)
}

// reclaimSQL deletes the expired leases of kind $1, charges their tokens as spent and
// records a ledger row with outcome 'unknown' for each day (priced at $2 USD per
// million tokens). It returns how many leases it reclaimed and their tokens.
const reclaimSQL = `
WITH dead AS (
	DELETE FROM budget_leases WHERE kind = $1 AND expires_at < now() RETURNING day, granted
), s AS (
	SELECT day, sum(granted)::bigint AS g, count(*) AS n FROM dead GROUP BY day
), u AS (
	UPDATE budgets SET used = budgets.used + s.g, reserved = greatest(budgets.reserved - s.g, 0)
	FROM s WHERE budgets.day = s.day AND budgets.kind = $1 RETURNING 1
), led AS (
	INSERT INTO ledger (kind, channel, tool, model, tokens, cost_usd, cache_hit, outcome)
	SELECT $1, 'internal', 'lease', '', s.g, s.g * $2::float8 / 1e6, false, 'unknown' FROM s WHERE s.g > 0
	RETURNING 1
)
SELECT coalesce(sum(n), 0)::bigint, coalesce(sum(g), 0)::bigint FROM s`

// Reclaim takes back the leases of this budget's kind that their replicas stopped
// renewing, charging their tokens as spent, and returns how many it reclaimed.
func (b *Budget) Reclaim(ctx context.Context) (int64, error) {
	var n, tokens int64
	if err := b.pool.QueryRow(ctx, reclaimSQL, b.opts.Kind, b.opts.PricePerMTok).Scan(&n, &tokens); err != nil {
		return 0, pgerr.Wrap("budget.Reclaim", err)
	}
	if n > 0 {
		b.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "reclaimed the budget leases of stopped replicas; charged as spent",
			slog.String("kind", b.opts.Kind), slog.Int64("leases", n), slog.Int64("tokens", tokens))
	}
	return n, nil
}

// ReclaimEvery reclaims expired leases now and then every half lease TTL until ctx
// ends, so that no lease outlives its replica by more than about one and a half TTLs
// even when no replica reserves.
func (b *Budget) ReclaimEvery(ctx context.Context) {
	t := time.NewTicker(b.opts.LeaseTTL / 2)
	defer t.Stop()
	for {
		if _, err := b.Reclaim(ctx); err != nil && ctx.Err() == nil {
			b.opts.Logger.Debug("budget lease reclaim failed", "kind", b.opts.Kind, "err", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
