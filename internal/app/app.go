// Package app is sitetools' composition root: Build turns a configuration into the
// running parts (database pool, embedder, budgets, ledgers, the tools, the chat's model
// and the HTTP application), and Run serves them with the retention beside. serve, the
// bench and the end-to-end tests all build the service here, so that there is one wiring.
package app

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/sitetools/sitetools/internal/config"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitetools/sitetools/internal/breaker"
	"github.com/sitetools/sitetools/internal/budget"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/server"
	"github.com/sitetools/sitetools/tools"
	"github.com/sitetools/sitetools/tools/appointments"
)

// Options are what Build needs beside the configuration. The zero value builds everything
// from the configuration.
type Options struct {
	Logger *slog.Logger // nil discards
	// DB is the pool to use; nil opens one from the configuration, which Close closes.
	DB *postgres.DB
	// Metrics is where every part registers its metrics; nil: a registry of its own.
	Metrics *prometheus.Registry
	// Register adds tools after the configured ones (the bench's realistic catalog).
	Register func(*tools.Registry) error
}

// Service is sitetools as serve runs it.
type Service struct {
	Config  config.Config
	DB      *postgres.DB
	Metrics *prometheus.Registry
	// HTTP is the application: routes, channels and the registry they share.
	HTTP *server.App
	// Search is search_site's machinery.
	Search *Search
	// LLMBudget is the chat model's daily budget, shared by the chat and the usage report.
	LLMBudget *budget.Budget
	// Breakers keep calls off the embedding and the chat provider while they are down
	// (nil where turned off).
	Breakers []*breaker.Breaker
	// Sync keeps the index in step with the site (INGEST_SITEMAP_URL): on a timer, and
	// through the publish hook POST /admin/reindex.
	Sync *Syncer

	logger  *slog.Logger
	closers []func()
}

// Build builds the service. It connects to nothing that may be down: with the database
// unreachable it still builds, and /readyz reports it until the database returns.
func Build(ctx context.Context, cfg config.Config, opts Options) (svc *Service, err error) {
	s := &Service{Config: cfg, DB: opts.DB, Metrics: opts.Metrics, logger: opts.Logger}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.Metrics == nil {
		s.Metrics = prometheus.NewRegistry()
	}
	if s.DB == nil {
		if s.DB, err = postgres.Open(ctx, cfg.DatabaseURL, cfg.DatabaseMaxConns, VectorSearch(cfg)); err != nil {
			return nil, err
		}
		s.closers = append(s.closers, s.DB.Close)
	}
	if err := s.DB.Ready(ctx); err != nil {
		// Serve anyway: /readyz reports it, and the service recovers when the database does.
		s.logger.Warn("database not ready", "err", err.Error())
	}
	providerMetrics := budget.NewProviderMetrics(s.Metrics)
	counts := &fairUseCounts{}
	embeddingBudget := budget.New(s.DB.Pool, budgetOptions(cfg, "embedding", cfg.Embeddings.DailyTokenBudget, cfg.Embeddings.PricePerMTok, counts, s.logger))
	s.LLMBudget = budget.New(s.DB.Pool, budgetOptions(cfg, "llm", cfg.Chat.DailyTokenBudget, cfg.Chat.PricePerMTok, counts, s.logger))
	s.closers = append(s.closers, func() { closeBudgets(s.logger, embeddingBudget, s.LLMBudget) })
	for _, b := range []*budget.Budget{embeddingBudget, s.LLMBudget} {
		// What the providers reported before (ingest, other replicas) sizes reservations
		// from the first call; without it they assume the worst until the first report.
		if err := b.LoadRatios(ctx); err != nil {
			s.logger.Warn("could not read the providers' token ratios", "kind", b.Kind(), "err", err.Error())
		}
	}
	embeddingBreaker, err := newBreaker("embedding", cfg.Embeddings.BreakerFailures, cfg.Embeddings.BreakerCooldown, s.Metrics, s.logger)
	if err != nil {
		return nil, err
	}
	chatBreaker, err := newBreaker("llm", cfg.Chat.BreakerFailures, cfg.Chat.BreakerCooldown, s.Metrics, s.logger)
	if err != nil {
		return nil, err
	}
	s.Breakers = []*breaker.Breaker{embeddingBreaker, chatBreaker}
	if s.Search, err = newSearch(ctx, cfg, s.DB, searchParts{logger: s.logger, reg: s.Metrics, pm: providerMetrics,
		budget: embeddingBudget, breaker: embeddingBreaker}); err != nil {
		return nil, err
	}
	avail, closeFeeds, err := newAvailability(ctx, cfg, s.DB, s.logger)
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, closeFeeds)
	siteTools := slices.Clone(s.Search.Tools)
	var bookings appointments.BookingStore
	if avail != nil {
		t, err := avail.Tool()
		if err != nil {
			return nil, err
		}
		siteTools = append(siteTools, t)
		bookings = postgres.NewBookings(s.DB)
	}
	s.Sync = newSyncer(cfg, s.DB, s.logger, s.Metrics)
	var reindex server.Reindexer
	if s.Sync.Enabled() {
		reindex = s.Sync
	}
	chat, persona, err := newChat(cfg.Chat, s.logger)
	if err != nil {
		return nil, err
	}
	s.HTTP, err = Wire(cfg, Parts{
		DB: s.DB, Logger: s.logger, Metrics: s.Metrics, Usage: s.Usage, Bookings: bookings,
		ChatProvider: chat, ChatPersona: persona, ChatBudget: s.LLMBudget, ChatBreaker: chatBreaker,
		ProviderMetrics: providerMetrics, Reindex: reindex, FairUseCounts: counts, Pressure: s.LLMBudget.Pressure,
		Ceilings: map[string]func() int64{"embedding": embeddingBudget.Ceiling, "llm": s.LLMBudget.Ceiling},
		Register: func(r *tools.Registry) error {
			for _, t := range siteTools {
				if err := r.Add(t); err != nil {
					return err
				}
			}
			if opts.Register != nil {
				return opts.Register(r)
			}
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Run serves until ctx is done, applying the retention every hour on whichever replica
// gets the lock, reclaiming the budget leases of stopped replicas, and syncing the index
// with the site (see Syncer); it returns once the sync under way has recorded its end.
func (s *Service) Run(ctx context.Context) error {
	stop := startPruning(ctx, s.DB, Retention(s.Config.Retention), s.logger, s.Metrics)
	defer stop()
	reclaimCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, b := range []*budget.Budget{s.Search.Budget, s.LLMBudget} {
		go b.ReclaimEvery(reclaimCtx)
	}
	synced := make(chan struct{})
	go func() { defer close(synced); s.Sync.Run(reclaimCtx) }()
	defer func() { cancel(); <-synced }()
	return s.HTTP.Run(ctx)
}

// Retention is the retention configured, as internal/postgres applies it.
func Retention(r config.Retention) postgres.Retention {
	return postgres.Retention{LedgerDays: r.LedgerDays, EmbeddingCacheDays: r.EmbeddingCacheDays, EmbeddingCacheMaxRows: r.EmbeddingCacheMaxRows}
}

// Close releases what Build opened, in reverse order.
func (s *Service) Close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}

// UsageReport is the admin usage report: the ledger by day, channel and tool, and
// today's budgets.
type UsageReport struct {
	Budgets []budget.Usage     `json:"budgets"`
	Ledger  []budget.ReportRow `json:"ledger"`
	// Breakers are the providers' circuits as this replica sees them (each replica has
	// its own); absent from `sitetools usage`, which runs in a process of its own.
	Breakers []breaker.Status `json:"breakers,omitempty"`
}

// Usage reports paid usage of the last days days and today's budgets, for the admin API
// and `sitetools usage`.
func (s *Service) Usage(ctx context.Context, days int) (any, error) {
	r, err := usage(ctx, s.Search, s.LLMBudget, days)
	for _, b := range s.Breakers {
		r.Breakers = append(r.Breakers, b.Status())
	}
	return r, err
}

func usage(ctx context.Context, search *Search, llmBudget *budget.Budget, days int) (UsageReport, error) {
	var r UsageReport
	for _, b := range []*budget.Budget{search.Budget, llmBudget} {
		today, err := b.Today(ctx)
		if err != nil {
			return r, err
		}
		r.Budgets = append(r.Budgets, today)
	}
	rows, err := search.Ledger.Report(ctx, days)
	if err != nil {
		return r, err
	}
	r.Ledger = rows
	if r.Ledger == nil {
		r.Ledger = []budget.ReportRow{}
	}
	return r, nil
}

// newBreaker returns the circuit breaker of a provider, or nil when failures is 0 (off).
func newBreaker(kind string, failures int, cooldown time.Duration, reg prometheus.Registerer, logger *slog.Logger) (*breaker.Breaker, error) {
	if failures == 0 {
		return nil, nil
	}
	return breaker.New(breaker.Options{Kind: kind, Failures: failures, Cooldown: cooldown, Registerer: reg, Logger: logger})
}

// closeBudgets writes what the budgets hold pending and gives back their leases.
func closeBudgets(logger *slog.Logger, budgets ...*budget.Budget) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, b := range budgets {
		if err := b.Close(ctx); err != nil {
			logger.Warn("budget close failed; its lease expires and is reclaimed", "kind", b.Kind(), "err", err.Error())
		}
	}
}
