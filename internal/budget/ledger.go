package budget

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sitetools/sitetools/internal/postgres/pgerr"
)

// Entry is one ledger row: a provider call or a shared-cache hit. It has no field for
// the text of a query, by design.
type Entry struct {
	Kind     string // "embedding" | "llm"
	Channel  string
	Tool     string
	Model    string
	Tokens   int
	CostUSD  float64
	CacheHit bool
	Outcome  string // one of the Outcome* constants
}

// The outcomes of a ledger row.
const (
	// OutcomeOK: the provider answered and reported (or we counted) the tokens.
	OutcomeOK = "ok"
	// OutcomeError: the call never reached the provider (refused connection, name not
	// found), or the provider refused it (4xx, 429 included): not billed.
	OutcomeError = "error"
	// OutcomeUnknown: the call may have reached the provider and nothing says what it
	// counted (timed out, cancelled after being sent, reset, 5xx, or its replica was
	// killed and its lease reclaimed); charged at its reservation.
	OutcomeUnknown = "unknown"
	// OutcomeSkipped: the call was not made because the provider's circuit was open.
	OutcomeSkipped = "skipped"
)

// Ledger records paid calls in PostgreSQL.
type Ledger struct {
	pool    *pgxpool.Pool
	metrics *ProviderMetrics
}

// NewLedger returns a ledger on pool.
func NewLedger(pool *pgxpool.Pool) *Ledger { return &Ledger{pool: pool} }

// WithMetrics makes the ledger count what it records in m (nil: not counted), and returns
// it.
func (l *Ledger) WithMetrics(m *ProviderMetrics) *Ledger {
	l.metrics = m
	return l
}

// Record writes e. It outlives a cancelled caller: a call that was paid for is recorded.
// The statements of also, a caller's own writes that belong with the call, go in the same
// round trip and transaction after the row; should PostgreSQL refuse one, the row is
// written again on its own, so that no call goes unrecorded, and the refusal is returned.
func (l *Ledger) Record(ctx context.Context, e Entry, also ...Statement) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if e.Channel == "" {
		e.Channel = "internal"
	}
	l.metrics.observe(e) // the call happened, whether or not its row can be written
	args := []any{e.Kind, e.Channel, e.Tool, e.Model, e.Tokens, e.CostUSD, e.CacheHit, e.Outcome}
	if len(also) == 0 {
		_, err := l.pool.Exec(ctx, ledgerInsert, args...)
		return pgerr.Wrap("budget.Record", err)
	}
	b := &pgx.Batch{}
	b.Queue(ledgerInsert, args...)
	for _, st := range also {
		b.Queue(st.SQL, st.Args...)
	}
	err := l.pool.SendBatch(ctx, b).Close()
	var refused *pgconn.PgError
	if err == nil || !errors.As(err, &refused) {
		// Written, or not known to be: a lost connection may have followed the commit.
		return pgerr.Wrap("budget.Record", err)
	}
	// PostgreSQL refused a statement, and with it the transaction.
	if _, lerr := l.pool.Exec(ctx, ledgerInsert, args...); lerr != nil {
		return pgerr.Wrap("budget.Record", lerr)
	}
	return pgerr.Wrap("budget.Record: the statements recorded with the call", err)
}

// Statement is an SQL statement and its arguments.
type Statement struct {
	SQL  string
	Args []any
}

const ledgerInsert = `INSERT INTO ledger (kind, channel, tool, model, tokens, cost_usd, cache_hit, outcome)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`

// ReportRow aggregates the ledger per day, kind, channel and tool.
type ReportRow struct {
	Day       string  `json:"day"`
	Kind      string  `json:"kind"`
	Channel   string  `json:"channel"`
	Tool      string  `json:"tool"`
	Calls     int64   `json:"providerCalls"` // calls made, cache hits and skipped calls not included
	CacheHits int64   `json:"cacheHits"`
	Errors    int64   `json:"errors"`     // calls that never reached the provider or that it refused
	Unknown   int64   `json:"unknown"`    // calls charged at their reservation: delivery unknown
	Saved     int64   `json:"callsSaved"` // calls not made because the circuit was open
	Tokens    int64   `json:"tokens"`
	CostUSD   float64 `json:"costUsd"`
}

// Report returns the ledger of the last days days (UTC), newest first.
func (l *Ledger) Report(ctx context.Context, days int) ([]ReportRow, error) {
	rows, err := l.pool.Query(ctx, `
		SELECT to_char(date_trunc('day', at AT TIME ZONE 'UTC'), 'YYYY-MM-DD'), kind, channel, tool,
		       count(*) FILTER (WHERE NOT cache_hit AND outcome <> 'skipped'), count(*) FILTER (WHERE cache_hit),
		       count(*) FILTER (WHERE outcome = 'error'), count(*) FILTER (WHERE outcome = 'unknown'),
		       count(*) FILTER (WHERE outcome = 'skipped'), coalesce(sum(tokens), 0), coalesce(sum(cost_usd), 0)::float8
		FROM ledger
		WHERE at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - make_interval(days => $1 - 1)
		GROUP BY 1, 2, 3, 4 ORDER BY 1 DESC, 2, 3, 4`, days)
	if err != nil {
		return nil, pgerr.Wrap("budget.Report", err)
	}
	defer rows.Close()
	var out []ReportRow
	for rows.Next() {
		var r ReportRow
		if err := rows.Scan(&r.Day, &r.Kind, &r.Channel, &r.Tool, &r.Calls, &r.CacheHits, &r.Errors, &r.Unknown, &r.Saved, &r.Tokens, &r.CostUSD); err != nil {
			return nil, pgerr.Wrap("budget.Report", err)
		}
		out = append(out, r)
	}
	return out, pgerr.Wrap("budget.Report", rows.Err())
}
