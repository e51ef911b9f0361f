package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Retention says how long the rows that grow with use are kept. A zero field keeps them.
type Retention struct {
	// LedgerDays keeps ledger rows, daily budget rows and the insight counts
	// (activity_daily, page_daily) this many days (LEDGER_RETENTION_DAYS).
	LedgerDays int
	// EmbeddingCacheDays keeps a cached query embedding this many days after its last use
	// (EMBEDDING_CACHE_TTL_DAYS).
	EmbeddingCacheDays int
	// EmbeddingCacheMaxRows keeps at most this many cached query embeddings, the most
	// recently used (EMBEDDING_CACHE_MAX_ROWS).
	EmbeddingCacheMaxRows int
}

// Pruned counts the rows one Prune deleted, per table.
type Pruned struct {
	Ledger         int64 `json:"ledger"`
	Budgets        int64 `json:"budgets"`
	EmbeddingCache int64 `json:"embedding_cache"`
	Idempotency    int64 `json:"idempotency_keys"`
	Insights       int64 `json:"insights"` // rows of activity_daily and page_daily
	// RatedAnswers are rows of rated_answers whose answer ids are no longer taken.
	RatedAnswers int64 `json:"rated_answers"`
	// SpentChallenges are expired proof-of-work challenges (spent_challenges): an expired
	// challenge is refused anyway.
	SpentChallenges int64 `json:"spent_challenges"`
	// ClientShares are the per-client share rows of days before today (UTC): a share
	// lasts one day, and its hashing key changes with the day.
	ClientShares int64 `json:"client_shares"`
	// CountedHandovers are rows of counted_handovers that match nothing any more: a
	// visitor's of a day that is over, an answer's whose id is refused.
	CountedHandovers int64 `json:"counted_handovers"`
}

// Tables returns the counts by table name, for logs and metrics.
func (p Pruned) Tables() map[string]int64 {
	return map[string]int64{"ledger": p.Ledger, "budgets": p.Budgets, "embedding_cache": p.EmbeddingCache, "idempotency_keys": p.Idempotency, "insights": p.Insights, "rated_answers": p.RatedAnswers,
		"spent_challenges": p.SpentChallenges, "client_shares": p.ClientShares, "counted_handovers": p.CountedHandovers}
}

// ErrPruneBusy is returned by a Prune that does not wait while another one (on another
// replica, or `sitetools prune`) holds the lock.
var ErrPruneBusy = errors.New("another process is pruning")

// pruneLockKey is the advisory lock that lets one process prune at a time.
const pruneLockKey int64 = 0x7369_7465_7072_756e // "siteprun" in ASCII

// ratedAnswerDays is how many days before today (UTC) a rated answer's row is kept:
// the 7 days of insights.AnswerIDMaxAge and the day of grace AnswerIDs.Check allows.
const ratedAnswerDays = 8

// pruneBatch is how many rows one DELETE removes, so that no statement holds its locks
// (or grows the WAL) for long.
const pruneBatch = 5000

// Prune deletes what the retention no longer keeps: ledger rows, budget days and insight
// counts older than LedgerDays, cached query embeddings unused for EmbeddingCacheDays and those beyond
// the EmbeddingCacheMaxRows most recently used, expired idempotency keys and expired
// proof-of-work challenges. Rows go in
// batches, each its own statement, so a long backlog never blocks the service.
// Rated answers and counted hand-overs go once they can match nothing, whatever the
// retention: they are kept only to know a replay.
//
// One process prunes at a time, under a PostgreSQL advisory lock. With wait false, Prune
// returns ErrPruneBusy at once if another holds it; with wait true it waits for it.
func (db *DB) Prune(ctx context.Context, r Retention, wait bool) (Pruned, error) {
	var out Pruned
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		return out, Wrap("postgres.Prune", err)
	}
	defer conn.Release()
	if err := lockPrune(ctx, conn, wait); err != nil {
		return out, err
	}
	defer func() {
		// On a dead connection the lock went with the session.
		unlockCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(unlockCtx, `SELECT pg_advisory_unlock($1)`, pruneLockKey); err != nil {
			conn.Conn().Close(unlockCtx)
		}
	}()

	batches := func(counter *int64, query string, args ...any) error {
		for {
			tag, err := conn.Exec(ctx, query, append(args, pruneBatch)...)
			if err != nil {
				return err
			}
			*counter += tag.RowsAffected()
			if tag.RowsAffected() < pruneBatch {
				return nil
			}
		}
	}
	var steps []func() error
	if r.LedgerDays > 0 {
		steps = append(steps,
			func() error {
				return batches(&out.Ledger, `DELETE FROM ledger WHERE id IN (
					SELECT id FROM ledger WHERE at < now() - make_interval(days => $1) LIMIT $2)`, r.LedgerDays)
			},
			func() error {
				return batches(&out.Budgets, `DELETE FROM budgets WHERE (day, kind) IN (
					SELECT day, kind FROM budgets WHERE day < current_date - $1::int LIMIT $2)`, r.LedgerDays)
			},
			func() error {
				return batches(&out.Insights, `DELETE FROM activity_daily WHERE (day, event, detail) IN (
					SELECT day, event, detail FROM activity_daily WHERE day < current_date - $1::int LIMIT $2)`, r.LedgerDays)
			},
			func() error {
				return batches(&out.Insights, `DELETE FROM page_daily WHERE (day, url) IN (
					SELECT day, url FROM page_daily WHERE day < current_date - $1::int LIMIT $2)`, r.LedgerDays)
			})
	}
	if r.EmbeddingCacheDays > 0 {
		steps = append(steps, func() error {
			return batches(&out.EmbeddingCache, `DELETE FROM embedding_cache WHERE key IN (
				SELECT key FROM embedding_cache WHERE used_at < now() - make_interval(days => $1) LIMIT $2)`, r.EmbeddingCacheDays)
		})
	}
	if r.EmbeddingCacheMaxRows > 0 {
		steps = append(steps, func() error {
			return batches(&out.EmbeddingCache, `DELETE FROM embedding_cache WHERE key IN (
				SELECT key FROM embedding_cache ORDER BY used_at DESC, key OFFSET $1 LIMIT $2)`, r.EmbeddingCacheMaxRows)
		})
	}
	steps = append(steps, ratedAnswers(&out.RatedAnswers, batches), func() error {
		// Claims of query embeddings whose fetch ended without releasing them (a killed
		// replica): the next fetch of the query overwrites one, this keeps the rest few.
		var claims int64
		return batches(&claims, `DELETE FROM embedding_claims WHERE key IN (
			SELECT key FROM embedding_claims WHERE until < now() LIMIT $1)`)
	}, func() error {
		return batches(&out.Idempotency, `DELETE FROM idempotency_keys WHERE (tool, key_hash) IN (
			SELECT tool, key_hash FROM idempotency_keys WHERE expires_at < now() LIMIT $1)`)
	}, spentChallenges(&out.SpentChallenges, batches), pastShares(&out.ClientShares, batches), pastHandovers(&out.CountedHandovers, batches))
	for _, step := range steps {
		if err := step(); err != nil {
			return out, Wrap("postgres.Prune", err)
		}
	}
	return out, nil
}

// spentChallenges is the step of Prune that deletes the proof-of-work challenges past
// their expiry: an expired challenge is refused anyway.
func spentChallenges(n *int64, batches func(*int64, string, ...any) error) func() error {
	return func() error {
		return batches(n, `DELETE FROM spent_challenges WHERE challenge IN (
			SELECT challenge FROM spent_challenges WHERE expires_at < now() LIMIT $1)`)
	}
}

// ratedAnswers is the step of Prune that deletes the rows of rated_answers older than
// ratedAnswerDays. An answer id is refused once it is more than insights.AnswerIDMaxAge
// and a day old, and a row's day (UTC) is never before its id's: an older row guards
// against nothing.
func ratedAnswers(n *int64, batches func(*int64, string, ...any) error) func() error {
	return func() error {
		return batches(n, `DELETE FROM rated_answers WHERE answer IN (
			SELECT answer FROM rated_answers WHERE day < (now() AT TIME ZONE 'UTC')::date - $1::int LIMIT $2)`, ratedAnswerDays)
	}
}

// pastShares is the step of Prune that deletes the client share rows of days before
// today (UTC): a share lasts one day, whatever the retention.
func pastShares(n *int64, batches func(*int64, string, ...any) error) func() error {
	return func() error {
		return batches(n, `DELETE FROM client_shares WHERE (day, kind, client) IN (
			SELECT day, kind, client FROM client_shares WHERE day < (now() AT TIME ZONE 'UTC')::date LIMIT $1)`)
	}
}

// pastHandovers is the step of Prune that deletes the rows of counted_handovers that can
// match no hand-over any more, whatever the retention: a visitor's (16 bytes) once its
// day (UTC) is over, since the next day names the visitor under another key; an answer's
// (32 bytes) after ratedAnswerDays, as rated_answers' rows: its id is refused by then.
func pastHandovers(n *int64, batches func(*int64, string, ...any) error) func() error {
	return func() error {
		return batches(n, `DELETE FROM counted_handovers WHERE key IN (
			SELECT key FROM counted_handovers WHERE day < (now() AT TIME ZONE 'UTC')::date - $1::int
				OR (length(key) = 16 AND day < (now() AT TIME ZONE 'UTC')::date) LIMIT $2)`, ratedAnswerDays)
	}
}

// lockPrune takes the prune lock on conn: waiting for it, or ErrPruneBusy at once if
// another process holds it and wait is false.
func lockPrune(ctx context.Context, conn *pgxpool.Conn, wait bool) error {
	if wait {
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, pruneLockKey); err != nil {
			return Wrap("postgres.Prune: lock", err)
		}
		return nil
	}
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, pruneLockKey).Scan(&got); err != nil {
		return Wrap("postgres.Prune: lock", err)
	}
	if !got {
		return ErrPruneBusy
	}
	return nil
}

// PruneEvery runs Prune without waiting, now and then every interval until ctx ends, and
// passes each outcome to report (ErrPruneBusy when another replica had the lock).
func (db *DB) PruneEvery(ctx context.Context, r Retention, interval time.Duration, report func(Pruned, error)) {
	if interval <= 0 {
		panic(fmt.Sprintf("postgres.PruneEvery: interval %v", interval))
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		report(db.Prune(ctx, r, false))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
