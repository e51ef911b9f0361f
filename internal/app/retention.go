package app

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitetools/sitetools/internal/postgres"
)

// pruneInterval is how often serve applies the retention.
const pruneInterval = time.Hour

// startPruning applies the retention now and every pruneInterval, on whichever replica
// gets the lock, until the returned function is called; it waits for a run under way.
func startPruning(ctx context.Context, db *postgres.DB, r postgres.Retention, logger *slog.Logger, reg prometheus.Registerer) (stop func()) {
	deleted := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sitetools_retention_deleted_rows_total",
		Help: "Rows the retention deleted, by table.",
	}, []string{"table"})
	runs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sitetools_retention_runs_total",
		Help: "Retention runs by outcome: ok, busy (another replica held the lock) or error.",
	}, []string{"outcome"})
	reg.MustRegister(deleted, runs)
	for table := range (postgres.Pruned{}).Tables() {
		deleted.WithLabelValues(table)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		db.PruneEvery(ctx, r, pruneInterval, func(p postgres.Pruned, err error) {
			switch {
			case errors.Is(err, postgres.ErrPruneBusy):
				runs.WithLabelValues("busy").Inc()
			case err != nil && ctx.Err() == nil:
				runs.WithLabelValues("error").Inc()
				logger.Warn("retention run failed", "err", err.Error())
			case err == nil:
				runs.WithLabelValues("ok").Inc()
				args := []any{}
				var total int64
				for table, n := range p.Tables() {
					deleted.WithLabelValues(table).Add(float64(n))
					args, total = append(args, table, n), total+n
				}
				if total > 0 {
					logger.Info("retention deleted rows", args...)
				}
			}
		})
	}()
	return func() { cancel(); <-done }
}
