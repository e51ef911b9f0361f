package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// syncMetrics are the index sync's metrics: counters of the runs of this replica, and a
// collector of the cluster's last successful sync, the index's age and the pages that
// sync left out, read from PostgreSQL at each scrape, the same on every replica
// (aggregate them with max).
type syncMetrics struct {
	pages *prometheus.CounterVec
	bytes prometheus.Counter
	runs  *prometheus.CounterVec
}

// syncPageOutcomes are the outcome labels of sitetools_index_sync_pages_total.
var syncPageOutcomes = []string{"added", "updated", "unchanged", "not_modified", "removed", "failed"}

func newSyncMetrics(db *postgres.DB, interval time.Duration, logger *slog.Logger, reg prometheus.Registerer) *syncMetrics {
	m := &syncMetrics{
		pages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitetools_index_sync_pages_total",
			Help: "Pages the index syncs of this replica handled, by outcome (unchanged includes not_modified: a 304, and pages whose sitemap lastmod had not moved).",
		}, []string{"outcome"}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sitetools_index_sync_bytes_total",
			Help: "Bytes of page bodies the index syncs of this replica fetched.",
		}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitetools_index_sync_runs_total",
			Help: "Index syncs of this replica by trigger (interval, hook) and outcome (ok, partial: some pages failed and were kept, failed, skipped: another replica held the lock or had just synced).",
		}, []string{"trigger", "outcome"}),
	}
	reg.MustRegister(m.pages, m.bytes, m.runs, &syncCollector{db: db, interval: interval, logger: logger,
		last: prometheus.NewDesc("sitetools_index_last_sync_timestamp_seconds",
			"When the last successful full sync of the index with the site finished (Unix time; 0: never), cluster-wide.", nil, nil),
		age: prometheus.NewDesc("sitetools_index_age_seconds",
			"Seconds since the last successful full sync finished (before any: since the last page was written; 0 for an empty index), cluster-wide.", nil, nil),
		every: prometheus.NewDesc("sitetools_index_sync_interval_seconds",
			"This replica's INGEST_INTERVAL in seconds; 0 when it syncs on no timer (no INGEST_SITEMAP_URL, or INGEST_INTERVAL=0).", nil, nil),
		leftOut: prometheus.NewDesc("sitetools_index_sync_left_out_pages",
			"Pages the sitemap listed beyond INGEST_MAX_PAGES that the last successful full sync left out of the index (the newest are indexed), cluster-wide.", nil, nil),
		rebuild: prometheus.NewDesc("sitetools_index_rebuild_chunks",
			"A rebuild of the index's vectors for another model, under way or stopped: chunks that have their new vector (of=\"done\") and all chunks (of=\"total\"); both 0 when there is none, cluster-wide.", []string{"of"}, nil),
	})
	for _, o := range syncPageOutcomes {
		m.pages.WithLabelValues(o)
	}
	for _, t := range []string{"interval", "hook"} {
		for _, o := range []string{"ok", "partial", "failed", "skipped"} {
			if t == "hook" && o == "skipped" {
				continue
			}
			m.runs.WithLabelValues(t, o)
		}
	}
	return m
}

// count adds a run's outcome and pages.
func (m *syncMetrics) count(trigger, outcome string, p postgres.SyncPages, bytesFetched int64) {
	m.runs.WithLabelValues(trigger, outcome).Inc()
	for o, n := range map[string]int{"added": p.Added, "updated": p.Updated, "unchanged": p.Unchanged,
		"not_modified": p.NotModified, "removed": p.Removed, "failed": p.Failed} {
		m.pages.WithLabelValues(o).Add(float64(n))
	}
	m.bytes.Add(float64(bytesFetched))
}

// syncCollector exports the last successful full sync, the index's age and the pages
// that sync left out at each scrape. A scrape that cannot reach the database leaves them out (logged at debug:
// /readyz and its alert already report the database).
type syncCollector struct {
	db       *postgres.DB
	interval time.Duration
	logger   *slog.Logger

	last, age, every, leftOut, rebuild *prometheus.Desc
}

// Describe implements prometheus.Collector.
func (c *syncCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.last
	ch <- c.age
	ch <- c.every
	ch <- c.leftOut
	ch <- c.rebuild
}

// Collect implements prometheus.Collector.
func (c *syncCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.every, prometheus.GaugeValue, c.interval.Seconds())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	at, age, ok, err := postgres.LastFullSync(ctx, c.db)
	if err == nil && !ok {
		age, err = postgres.IndexWriteAge(ctx, c.db)
	}
	var leftOut int
	if err == nil {
		leftOut, err = postgres.LastFullSyncLeftOut(ctx, c.db)
	}
	var rebuild sitesearch.RebuildProgress
	if err == nil {
		// The chunks are counted only while a rebuild is recorded.
		rebuild, _, err = postgres.NewSiteIndex(c.db, 0).RebuildProgress(ctx)
	}
	if err != nil {
		c.logger.Debug("index sync metrics: database unavailable", "err", err.Error())
		return
	}
	ch <- prometheus.MustNewConstMetric(c.rebuild, prometheus.GaugeValue, float64(rebuild.Done), "done")
	ch <- prometheus.MustNewConstMetric(c.rebuild, prometheus.GaugeValue, float64(rebuild.Total), "total")
	last := 0.0
	if ok {
		last = float64(at.UnixNano()) / 1e9
	}
	ch <- prometheus.MustNewConstMetric(c.last, prometheus.GaugeValue, last)
	ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, age.Seconds())
	ch <- prometheus.MustNewConstMetric(c.leftOut, prometheus.GaugeValue, float64(leftOut))
}
