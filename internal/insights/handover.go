package insights

import (
	"context"

	"github.com/sitetools/sitetools/internal/postgres/pgerr"
)

// Handover counts a hand-over by tool (a browser tool filled in the contact form) once
// per key, on every replica, and says whether this call counted it. key is 32 bytes, the
// SHA-256 of the answer id the hand-over follows, or 16, the visitor's keyed name of the
// day (internal/clientkey): a replayed hand-over counts nothing, and one visitor without
// an answer id counts once a day.
//
// The key's row and the count are written in one transaction, at once, as a rating is,
// not batched in memory: a row stored without its count (the replica killed before its
// flush) would make every retry a replay, and the hand-over would never count. Hand-overs
// are few.
func (r *Recorder) Handover(ctx context.Context, tool string, key []byte) (bool, error) {
	if r == nil {
		return true, nil
	}
	counted, err := r.handover(ctx, vocabulary(tool), key)
	if err != nil {
		return false, pgerr.Wrap("insights.Handover", err)
	}
	if counted {
		r.metrics.handovers.WithLabelValues("called").Inc()
	}
	return counted, nil
}

func (r *Recorder) handover(ctx context.Context, tool string, key []byte) (bool, error) {
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	today := r.day()
	// A concurrent hand-over of the same key, on any replica, makes this wait for it to
	// commit and then insert nothing.
	tag, err := tx.Exec(ctx, `INSERT INTO counted_handovers (key, day) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING`, key, today)
	if err != nil || tag.RowsAffected() == 0 {
		return false, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO activity_daily (day, event, detail, n) VALUES ($1, $2, $3, 1)
		ON CONFLICT (day, event, detail) DO UPDATE SET n = activity_daily.n + 1`, today, EventHandoverCalled, tool); err != nil {
		return false, err
	}
	return true, tx.Commit(ctx)
}
