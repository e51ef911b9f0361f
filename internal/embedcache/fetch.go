package embedcache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/sitetools/sitetools/internal/breaker"
	"github.com/sitetools/sitetools/internal/budget"
	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/postgres/pgerr"
)

// load finds the query's vector in the shared cache or fetches it from the provider.
// Across replicas, one fetches a new query at a time: it claims the query's key in
// embedding_claims, and the others wait for the shared cache to have it (or for the
// claim to end, and then claim it themselves) within the search's wait.
func (q *QueryEmbedder) load(ctx context.Context, call callInfo) (embedResult, error) {
	key := call.key
	poll := time.NewTicker(claimPoll)
	defer poll.Stop()
	for {
		v, claimed, err := q.lookup(ctx, key, call.t.model())
		switch {
		case err != nil:
			return embedResult{}, err
		case v != nil:
			q.cache.Add(key, v)
			q.hits.WithLabelValues("database").Inc()
			q.record(ctx, call, budget.Entry{CacheHit: true, Outcome: budget.OutcomeOK})
			return embedResult{vec: v}, nil
		case !claimed:
			// This process holds the claim now. The lookup's snapshot was taken before
			// its claim: a replica whose fetch ended in between stored the vector (and
			// then released its claim, which is how this one could take it) where that
			// snapshot could not see it. Read the cache again before paying for it.
			if v, err := q.cached(ctx, key, call.t.model()); err != nil || v != nil {
				q.unclaim(key)
				if err != nil {
					return embedResult{}, err
				}
				q.cache.Add(key, v)
				q.hits.WithLabelValues("database").Inc()
				q.record(ctx, call, budget.Entry{CacheHit: true, Outcome: budget.OutcomeOK})
				return embedResult{vec: v}, nil
			}
			return q.fetch(ctx, call)
		}
		// Another replica (or process) is fetching it: wait for its answer.
		select {
		case <-ctx.Done():
			q.hits.WithLabelValues("degraded").Inc()
			return embedResult{degraded: DegradedUnavailable}, nil
		case <-poll.C:
		}
	}
}

// claimPoll is how often a replica waiting for another's fetch looks at the cache.
const claimPoll = 20 * time.Millisecond

// lookupSQL reads the cached vector of key $1 for model $2, marking its use at most once
// a day; when there is none, it claims the key for $3 seconds unless another holder's
// claim is still valid. claimed reports that another holds it.
const lookupSQL = `
WITH hit AS (
	SELECT embedding, used_at < now() - interval '1 day' AS stale FROM embedding_cache WHERE key = $1 AND model = $2
), touch AS (
	UPDATE embedding_cache SET used_at = now() WHERE key = $1 AND (SELECT stale FROM hit) RETURNING 1
), claim AS (
	INSERT INTO embedding_claims (key, until) SELECT $1, now() + make_interval(secs => $3) WHERE NOT EXISTS (SELECT 1 FROM hit)
	ON CONFLICT (key) DO UPDATE SET until = EXCLUDED.until WHERE embedding_claims.until < now()
	RETURNING 1
)
SELECT (SELECT embedding FROM hit), NOT EXISTS (SELECT 1 FROM hit) AND NOT EXISTS (SELECT 1 FROM claim)`

// lookup returns the cached vector of key, or claims the key for this fetch, or reports
// that another holds the claim.
func (q *QueryEmbedder) lookup(ctx context.Context, key [32]byte, model string) (vec []float32, claimedElsewhere bool, err error) {
	var stored *pgvector.Vector
	err = q.opts.Pool.QueryRow(ctx, lookupSQL, key[:], model, (2*q.opts.Timeout+5*time.Second).Seconds()).Scan(&stored, &claimedElsewhere)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, fmt.Errorf("embedcache: %w", ctx.Err())
		}
		return nil, false, pgerr.Wrap("embedcache.EmbedQuery: cache", err)
	}
	if stored != nil {
		return stored.Slice(), false, nil
	}
	return nil, claimedElsewhere, nil
}

// cached reads key's vector from the shared cache in a statement of its own (nil: none).
func (q *QueryEmbedder) cached(ctx context.Context, key [32]byte, model string) ([]float32, error) {
	var v pgvector.Vector
	err := q.opts.Pool.QueryRow(ctx, `SELECT embedding FROM embedding_cache WHERE key = $1 AND model = $2`, key[:], model).Scan(&v)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, pgerr.Wrap("embedcache.EmbedQuery: cache", err)
	}
	return v.Slice(), nil
}

// callInfo is one query's fetch: what its ledger rows say, and the model it is for.
type callInfo struct {
	key                  [32]byte
	t                    target
	channel, tool, query string
	began                time.Time
}

// fetch calls the provider for a query whose key this process has claimed: behind the
// breaker and the budget, each request reserved before it is sent (retries too), and
// charged by what became of it.
func (q *QueryEmbedder) fetch(ctx context.Context, c callInfo) (res embedResult, err error) {
	released := false // the claim, released with the vector's cache row
	defer func() {
		if !released {
			q.unclaim(c.key)
		}
	}()
	brk, err := q.opts.Breaker.Allow() // a nil Breaker admits every call
	if err != nil {
		return q.skip(ctx, c), nil
	}
	model := c.t.model()
	sent := c.t.prefix + c.query
	n := int64(llm.CountTokens(sent))
	// Per request: the estimate by what the provider counted before, and a little for
	// the special tokens some models add. While in flight, it holds what it would cost
	// should the provider count far more than before (budget.Budget.Hold).
	per, hold := q.opts.Budget.Size(model, n)+8, q.opts.Budget.Hold(model, n)+8
	reservation, err := q.opts.Budget.ReserveHolding(ctx, per, hold)
	if errors.Is(err, budget.ErrBudgetExhausted) {
		brk.Done(breaker.ErrNotCalled)
		q.hits.WithLabelValues("degraded").Inc()
		return embedResult{degraded: degradedBy(err)}, nil
	}
	if err != nil {
		brk.Done(breaker.ErrNotCalled)
		return embedResult{}, err
	}
	callCtx, delivery := llm.Track(ctx)
	callCtx = llm.WithAttemptHook(callCtx, func(ctx context.Context, _ int) error {
		return reservation.ExtendHolding(ctx, per, hold)
	})
	callCtx, cancel := context.WithDeadline(callCtx, c.began.Add(2*q.opts.Timeout))
	out, callErr := c.t.embedder.Embed(callCtx, []string{sent})
	cancel()
	if callErr == nil && (len(out.Vectors) != 1 || len(out.Vectors[0]) != c.t.embedder.Dimensions()) {
		callErr = fmt.Errorf("provider returned %d vectors for 1 query", len(out.Vectors))
	}
	unknown := int64(delivery.Unknown()) * per
	if callErr != nil {
		brk.Done(callErr)
		return q.failed(ctx, c, reservation, unknown, callErr), nil
	}
	if late := time.Since(c.began) > q.opts.Timeout; late {
		// Served, but after the search stopped waiting: too slow for the breaker.
		brk.Done(fmt.Errorf("%w: answered after %s", context.DeadlineExceeded, q.opts.Timeout))
	} else {
		brk.Done(nil)
	}
	q.opts.Budget.Learn(model, n, int64(out.Tokens))
	tokens := int64(out.Tokens) + unknown
	reservation.Settle(tokens)
	v := out.Vectors[0]
	q.cache.Add(c.key, v)
	// The ledger row, the shared cache's row and the claim's release: one round trip.
	e := budget.Entry{Tokens: int(tokens), CostUSD: float64(tokens) * q.opts.PricePerMTok / 1e6, Outcome: budget.OutcomeOK}
	released = q.record(ctx, c, e,
		budget.Statement{SQL: `INSERT INTO embedding_cache (key, model, embedding) VALUES ($1, $2, $3)
		ON CONFLICT (key) DO UPDATE SET model = EXCLUDED.model, embedding = EXCLUDED.embedding, created_at = now(), used_at = now()`,
			Args: []any{c.key[:], model, pgvector.NewVector(v)}},
		budget.Statement{SQL: `DELETE FROM embedding_claims WHERE key = $1`, Args: []any{c.key[:]}}) == nil
	q.hits.WithLabelValues("provider").Inc()
	return embedResult{vec: v}, nil
}

// degradedBy is why a search runs without its vector when the budget refused the call.
func degradedBy(err error) string {
	switch {
	case errors.Is(err, budget.ErrClientShareSpent):
		return DegradedClientShare
	case errors.Is(err, budget.ErrPaced):
		return DegradedPaced
	}
	return DegradedBudget
}

// failed settles a failed call: requests that may have reached the provider are
// charged at their reservation (unknown tokens), and if none did, the reservation is
// released. The search degrades.
func (q *QueryEmbedder) failed(ctx context.Context, c callInfo, r *budget.Reservation, unknown int64, err error) embedResult {
	e := budget.Entry{Outcome: budget.OutcomeError}
	if unknown > 0 {
		r.Settle(unknown)
		e = budget.Entry{Tokens: int(unknown), CostUSD: float64(unknown) * q.opts.PricePerMTok / 1e6, Outcome: budget.OutcomeUnknown}
	} else {
		r.Release()
	}
	q.record(ctx, c, e)
	q.opts.Logger.Warn("embedding provider call failed; search degrades to full-text", "err", err.Error(), "outcome", e.Outcome)
	q.hits.WithLabelValues("degraded").Inc()
	return embedResult{degraded: DegradedUnavailable}
}

// skip degrades a search whose call the open circuit spared, and records it.
func (q *QueryEmbedder) skip(ctx context.Context, c callInfo) embedResult {
	q.record(ctx, c, budget.Entry{Outcome: budget.OutcomeSkipped})
	q.hits.WithLabelValues("degraded").Inc()
	return embedResult{degraded: DegradedUnavailable}
}

// record writes a ledger row of the query's call (kind, channel, tool and model filled
// in), with the statements of also in the same round trip (budget.Ledger.Record).
func (q *QueryEmbedder) record(ctx context.Context, c callInfo, e budget.Entry, also ...budget.Statement) error {
	e.Kind, e.Channel, e.Tool, e.Model = "embedding", c.channel, c.tool, c.t.model()
	err := q.opts.Ledger.Record(ctx, e, also...)
	if err != nil {
		q.opts.Logger.Warn("ledger write failed", "err", err.Error())
	}
	return err
}

// unclaim ends this process's claim on key, so that a replica waiting for it finds the
// cached vector or, if the fetch failed, claims the key itself.
func (q *QueryEmbedder) unclaim(key [32]byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := q.opts.Pool.Exec(ctx, `DELETE FROM embedding_claims WHERE key = $1`, key[:]); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		q.opts.Logger.Warn("embedding claim release failed", "err", err.Error())
	}
}
