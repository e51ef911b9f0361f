package insights

import (
	"context"
	"crypto/sha256"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sitetools/sitetools/internal/postgres/pgerr"
)

// RateOutcome is what Rate did with a rating.
type RateOutcome int

const (
	// RateCounted is the answer's first rating: it was counted.
	RateCounted RateOutcome = iota
	// RateRepeated is the rating the answer already has (a double click, a retry, a
	// replay): nothing was counted.
	RateRepeated
	// RateChanged is another rating than the answer's: its count moved from the old
	// rating to this one, on the day the first was counted.
	RateChanged
)

// Rate counts a visitor's rating of the answer id names, of kind (checked by
// AnswerIDs.Check); reason is ReasonNone or one of Reasons. The caller has checked all
// three against the vocabulary. An answer counts once, on every replica: the latest
// rating replaces the earlier one rather than adding to it, so that a replayed id cannot
// inflate the counts and a visitor who changes their mind is counted as they decided.
// The count is written with the answer's row in one transaction, not batched in memory
// as the other counts are: a move must subtract what was really added, and ratings are
// few.
//
// The Prometheus counter counts first ratings only: a counter cannot move a count, and
// counting each change would let one visitor inflate it by flipping.
func (r *Recorder) Rate(ctx context.Context, id, kind, rating, reason string) (RateOutcome, error) {
	if r == nil {
		return RateCounted, nil
	}
	sum := sha256.Sum256([]byte(id))
	out, err := r.rate(ctx, sum[:], kind+"/"+rating+"/"+reason)
	if err != nil {
		return out, pgerr.Wrap("insights.Rate", err)
	}
	if out == RateCounted {
		r.metrics.feedback.WithLabelValues(kind, rating, reason).Inc()
	}
	return out, nil
}

// rateChangeLockKey is the advisory lock under which a rating is changed.
const rateChangeLockKey int64 = 0x7369_7465_7261_7465 // "siterate" in ASCII

func (r *Recorder) rate(ctx context.Context, answer []byte, detail string) (RateOutcome, error) {
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		return RateCounted, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	today := r.day()
	// A concurrent first rating of the same answer, on any replica, makes this wait for
	// it to commit and then insert nothing.
	tag, err := tx.Exec(ctx, `INSERT INTO rated_answers (answer, day, detail) VALUES ($1, $2, $3)
		ON CONFLICT (answer) DO NOTHING`, answer, today, detail)
	if err != nil {
		return RateCounted, err
	}
	if tag.RowsAffected() == 1 {
		if _, err := tx.Exec(ctx, `INSERT INTO activity_daily (day, event, detail, n) VALUES ($1, $2, $3, 1)
			ON CONFLICT (day, event, detail) DO UPDATE SET n = activity_daily.n + 1`, today, EventFeedback, detail); err != nil {
			return RateCounted, err
		}
		return RateCounted, tx.Commit(ctx)
	}
	// Rated before: the row, locked, says how; concurrent changes of one answer take turns.
	var day time.Time
	var was string
	err = tx.QueryRow(ctx, `SELECT day, detail FROM rated_answers WHERE answer = $1 FOR UPDATE`, answer).Scan(&day, &was)
	switch {
	case errors.Is(err, pgx.ErrNoRows): // pruned in between: its id is too old to be taken
		return RateRepeated, nil
	case err != nil:
		return RateRepeated, err
	case was == detail:
		return RateRepeated, nil
	}
	if _, err := tx.Exec(ctx, `UPDATE rated_answers SET detail = $2 WHERE answer = $1`, answer, detail); err != nil {
		return RateChanged, err
	}
	// Changes take turns, on every replica: a change locks two counts, and two changes
	// moving counts in opposite directions at once could otherwise deadlock. A first
	// rating locks one count only, so it never waits for this. Changes are rare (the
	// widget never sends one).
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, rateChangeLockKey); err != nil {
		return RateChanged, err
	}
	var n int64
	err = tx.QueryRow(ctx, `SELECT n FROM activity_daily WHERE day = $1 AND event = $2 AND detail = $3 FOR UPDATE`,
		day, EventFeedback, was).Scan(&n)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		// The day's counts are gone (a retention shorter than the ids' life): nothing to
		// move, and no count to start for a day the report no longer has.
		return RateChanged, tx.Commit(ctx)
	case err != nil:
		return RateChanged, err
	}
	// A count of 0 is deleted, so that the report lists no reason nobody gave.
	old := `UPDATE activity_daily SET n = n - 1 WHERE day = $1 AND event = $2 AND detail = $3`
	if n <= 1 {
		old = `DELETE FROM activity_daily WHERE day = $1 AND event = $2 AND detail = $3`
	}
	b := &pgx.Batch{}
	b.Queue(old, day, EventFeedback, was)
	b.Queue(`INSERT INTO activity_daily (day, event, detail, n) VALUES ($1, $2, $3, 1)
		ON CONFLICT (day, event, detail) DO UPDATE SET n = activity_daily.n + 1`, day, EventFeedback, detail)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return RateChanged, err
	}
	return RateChanged, tx.Commit(ctx)
}
