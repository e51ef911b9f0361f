package app

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitetools/sitetools/internal/config"
	"github.com/sitetools/sitetools/internal/postgres"
)

// Syncer keeps the index in step with the site inside serve (INGEST_SITEMAP_URL): the
// whole sitemap every INGEST_INTERVAL (±10 %), and the publish hook's jobs at once.
//
// One sync runs at a time across the replicas, under one advisory lock: a full sync on
// the timer tries it and, while another holds it, tries again a tenth of an interval
// later; it also skips when another replica finished a full sync less than half an
// interval ago, so that N replicas sync once an interval, not N times. A hook's job runs
// on the replica that accepted it and waits for the lock: for a full sync under way on
// any replica, then runs.
type Syncer struct {
	cfg     config.Config
	db      *postgres.DB
	jobs    *postgres.IndexSyncs
	logger  *slog.Logger
	metrics *syncMetrics
	ingest  ingestSitemapFunc
	wake    chan struct{} // a job was queued here
	// lockPoll is how often a hook's job tries the lock while a sync holds it.
	lockPoll time.Duration
}

// newSyncer returns the syncer of cfg.Ingest and registers its metrics on reg, also
// when the sync is off (the metrics then say so: interval 0, no run).
func newSyncer(cfg config.Config, db *postgres.DB, logger *slog.Logger, reg prometheus.Registerer) *Syncer {
	s := &Syncer{cfg: cfg, db: db, jobs: postgres.NewIndexSyncs(db), logger: logger, ingest: syncIngest,
		wake: make(chan struct{}, 1), lockPoll: 100 * time.Millisecond}
	s.jobs.TookOver = func(n int) {
		s.logger.Info("index sync: took over the jobs of a replica that stopped", "jobs", n)
		s.wakeWorker()
	}
	interval := time.Duration(0)
	if s.Enabled() {
		interval = cfg.Ingest.Interval
	}
	s.metrics = newSyncMetrics(db, interval, logger, reg)
	return s
}

// Enabled reports whether serve syncs a sitemap (and has a publish hook).
func (s *Syncer) Enabled() bool { return s.cfg.Ingest.SitemapURL != "" }

// Origin is the site's origin, which the publish hook's URLs must be on.
func (s *Syncer) Origin() string { return s.cfg.Ingest.Origin() }

// Submit queues a publish hook's job on this replica (or answers with a queued job that
// covers it, or the job of a repeated Idempotency-Key) and wakes the worker.
func (s *Syncer) Submit(ctx context.Context, r postgres.SyncRequest) (postgres.IndexSync, bool, error) {
	job, coalesced, err := s.jobs.Submit(ctx, r)
	if err == nil {
		s.wakeWorker()
	}
	return job, coalesced, err
}

// wakeWorker tells the worker a job was queued here.
func (s *Syncer) wakeWorker() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Job returns the job id as it stands.
func (s *Syncer) Job(ctx context.Context, id string) (postgres.IndexSync, error) {
	return s.jobs.Get(ctx, id)
}

// Run syncs until ctx ends and returns once the sync under way has recorded how it
// ended: the timer (unless the interval is 0), the hook's worker, and the heartbeat of
// this replica's rows.
func (s *Syncer) Run(ctx context.Context) {
	if !s.Enabled() {
		return
	}
	var wg sync.WaitGroup
	loops := []func(context.Context){s.heartbeatLoop, s.workerLoop}
	if s.cfg.Ingest.Interval > 0 {
		loops = append(loops, s.timerLoop)
	}
	for _, loop := range loops {
		wg.Add(1)
		go func() { defer wg.Done(); loop(ctx) }()
	}
	wg.Wait()
}

// jitter returns d moved by up to ±10 %.
func jitter(d time.Duration) time.Duration {
	return d + time.Duration((rand.Float64()*0.2-0.1)*float64(d))
}

// timerLoop runs a full sync shortly after start-up (up to a tenth of the interval, at
// most 10 s, so that replicas started together spread out), then every interval.
func (s *Syncer) timerLoop(ctx context.Context) {
	interval := s.cfg.Ingest.Interval
	next := time.Duration(rand.Float64() * float64(min(interval/10, 10*time.Second)))
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(next):
		}
		next = jitter(interval)
		if busy := s.syncFull(ctx); busy {
			next = jitter(interval / 10)
		}
	}
}

// syncFull runs a full sync on the timer unless another sync holds the lock (busy true)
// or one finished less than half an interval ago.
func (s *Syncer) syncFull(ctx context.Context) (busy bool) {
	release, err := s.jobs.LockSync(ctx, false, 0)
	if errors.Is(err, postgres.ErrSyncBusy) {
		s.metrics.runs.WithLabelValues("interval", "skipped").Inc()
		return true
	}
	if err != nil {
		if ctx.Err() == nil {
			s.metrics.runs.WithLabelValues("interval", "failed").Inc()
			s.logger.Warn("index sync: could not take the lock", "err", err.Error())
		}
		return false
	}
	defer release()
	if _, age, ok, err := postgres.LastFullSync(ctx, s.db); err == nil && ok && age < s.cfg.Ingest.Interval/2 {
		s.metrics.runs.WithLabelValues("interval", "skipped").Inc()
		return false
	}
	id, err := s.jobs.StartInterval(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.metrics.runs.WithLabelValues("interval", "failed").Inc()
			s.logger.Warn("index sync: could not record the run", "err", err.Error())
		}
		return false
	}
	s.execute(ctx, id, "interval", nil)
	return false
}

// workerLoop runs this replica's queued hook jobs, oldest first, as they come.
func (s *Syncer) workerLoop(ctx context.Context) {
	for {
		job, ok, err := s.jobs.NextQueued(ctx)
		if err != nil && ctx.Err() == nil {
			s.logger.Warn("index sync: could not read the queued jobs", "err", err.Error())
		}
		if ok {
			s.runJob(ctx, job)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-time.After(postgres.SyncHeartbeat):
		}
	}
}

// runJob waits for the lock, then runs a hook's job.
func (s *Syncer) runJob(ctx context.Context, job postgres.IndexSync) {
	release, err := s.jobs.LockSync(ctx, true, s.lockPoll)
	if err != nil {
		// Shutting down (or the database is gone): the job stays queued and is taken over by
		// another replica once this one's heartbeat stops.
		if ctx.Err() == nil {
			s.logger.Warn("index sync: could not take the lock for a hook's job", "err", err.Error())
			time.Sleep(s.lockPoll)
		}
		return
	}
	defer release()
	if err := s.jobs.Start(ctx, job.ID); err != nil {
		if ctx.Err() == nil {
			s.logger.Warn("index sync: could not start a hook's job", "err", err.Error())
		}
		return
	}
	var urls []string
	if !job.All {
		urls = job.URLs
	}
	s.execute(ctx, job.ID, "hook", urls)
}

// execute runs the ingest of sync id (urls nil: the whole sitemap), records how it ended
// and counts it.
func (s *Syncer) execute(ctx context.Context, id, trigger string, urls []string) {
	began := time.Now()
	st, err := s.ingest(ctx, s.cfg, s.db, s.cfg.Ingest.SitemapURL, urls, trigger == "hook" && urls == nil, s.logger)
	pages, bytesFetched := syncPages(st)
	outcome, reason := "ok", ""
	switch {
	case err != nil && ctx.Err() != nil:
		outcome, reason = "failed", "serve stopped during the sync"
	case err != nil:
		outcome, reason = "failed", err.Error()
	case pages.Failed > 0:
		outcome = "partial"
	}
	recordCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.jobs.Finish(recordCtx, id, outcome, pages, bytesFetched, reason); err != nil {
		s.logger.Warn("index sync: could not record how it ended", "err", err.Error())
	}
	s.metrics.count(trigger, outcome, pages, bytesFetched)
	args := []any{"trigger", trigger, "outcome", outcome, "urls", len(urls), "took", time.Since(began).Round(time.Millisecond).String(),
		"added", pages.Added, "updated", pages.Updated, "unchanged", pages.Unchanged, "not_modified", pages.NotModified,
		"skipped", pages.Skipped, "removed", pages.Removed, "failed", pages.Failed, "left_out", pages.LeftOut, "bytes", bytesFetched}
	if outcome == "failed" {
		s.logger.Warn("index sync failed; the index is kept as it was", append(args, "err", reason)...)
		return
	}
	s.logger.Info("index sync", args...)
}

// heartbeatLoop renews this replica's queued and running rows, and takes over those of
// replicas that stopped (postgres.IndexSyncs.Sweep), at once and every
// postgres.SyncHeartbeat: a stopped replica's job is taken over within
// postgres.SyncTakeoverBound of its last heartbeat.
func (s *Syncer) heartbeatLoop(ctx context.Context) {
	t := time.NewTicker(postgres.SyncHeartbeat)
	defer t.Stop()
	for first := true; ; first = false {
		if !first {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
		if err := s.jobs.Heartbeat(ctx); err != nil && ctx.Err() == nil {
			s.logger.Warn("index sync: heartbeat failed", "err", err.Error())
		}
		if err := s.jobs.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.logger.Warn("index sync: sweep failed", "err", err.Error())
		}
	}
}
