package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitetools/sitetools/internal/assistant"
	"github.com/sitetools/sitetools/internal/breaker"
	"github.com/sitetools/sitetools/internal/budget"
	"github.com/sitetools/sitetools/internal/clientkey"
	"github.com/sitetools/sitetools/internal/config"
	"github.com/sitetools/sitetools/internal/insights"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/server"
	"github.com/sitetools/sitetools/tools"
	"github.com/sitetools/sitetools/tools/appointments"
)

// Parts are what Wire builds the HTTP application around: the tools, the chat's model,
// and where metrics, usage and bookings come from. Build makes them from the
// configuration; tests and the bench give their own.
type Parts struct {
	DB     *postgres.DB
	Logger *slog.Logger // nil discards
	// Metrics is where the metrics of the edge and the budgets go (nil: a registry of its
	// own).
	Metrics *prometheus.Registry
	// Register adds the tools to the registry; an error stops start-up.
	Register func(*tools.Registry) error
	// Usage reports paid usage on the admin API (nil: no report).
	Usage func(ctx context.Context, days int) (any, error)
	// Bookings are managed on the admin API (nil: no appointments).
	Bookings appointments.BookingStore
	// ChatProvider is the site chat's model (nil: every chat turn is answered
	// retrieval-only, with links).
	ChatProvider assistant.Provider
	// ChatPersona is the chat's persona and tone (empty: the built-in one).
	ChatPersona string
	// ChatBudget is the chat model's daily budget (nil: one from the configuration).
	ChatBudget *budget.Budget
	// ChatBreaker keeps turns off a chat model that is down (nil: none).
	ChatBreaker *breaker.Breaker
	// ProviderMetrics counts the paid calls of the chat's ledger (nil: new ones on
	// Metrics). Pass the ones other ledgers use, so that all count in one place.
	ProviderMetrics *budget.ProviderMetrics
	// Reindex is the publish hook's queue (nil: no POST /admin/reindex).
	Reindex server.Reindexer
	// FairUseCounts passes the budgets' fair-use events to the owner's counts (nil: the
	// budgets count none).
	FairUseCounts *fairUseCounts
	// Pressure says the paced LLM budget is running short (nil: never).
	Pressure func() bool
	// Ceilings are the budgets' paced ceilings by kind, for the metrics (nil: none).
	Ceilings map[string]func() int64
}

// Wire builds the HTTP application: the edge (metrics, rate limit, caps), the registry
// with the edge's interceptors and the idempotency store around every call, the tools,
// the budgets' metrics, the chat over the registry, and the routes.
func Wire(cfg config.Config, p Parts) (*server.App, error) {
	if p.DB == nil {
		return nil, fmt.Errorf("app.Wire: a database is required")
	}
	logger := p.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	edge := server.NewEdge(cfg, p.Metrics)
	edge.NameClients(budget.WithClient)
	counts := insights.New(p.DB.Pool, insights.Options{Logger: logger, Registerer: edge.Metrics()})
	if p.FairUseCounts != nil {
		p.FairUseCounts.set(counts)
	}
	registry := tools.NewRegistry(&tools.Options{
		DefaultTimeout: cfg.ToolTimeout,
		Logger:         logger,
		Interceptors:   append(edge.Interceptors(), postgres.NewIdempotencyStore(p.DB).Interceptor, counts.Intercept),
	})
	if p.Register != nil {
		if err := p.Register(registry); err != nil {
			return nil, fmt.Errorf("app.Wire: %w", err)
		}
	}
	metrics := edge.Metrics()
	providerMetrics := p.ProviderMetrics
	if providerMetrics == nil {
		providerMetrics = budget.NewProviderMetrics(metrics)
	}
	metrics.MustRegister(budget.NewUsageCollector(p.DB.Pool, map[string]int64{
		"embedding": cfg.Embeddings.DailyTokenBudget, "llm": cfg.Chat.DailyTokenBudget,
	}, logger).WithCeilings(p.Ceilings))
	chatOpts := assistant.Options{
		Registry:        registry,
		ToolMode:        cfg.Chat.ToolMode,
		Ledger:          budget.NewLedger(p.DB.Pool).WithMetrics(providerMetrics),
		PricePerMTok:    cfg.Chat.PricePerMTok,
		Persona:         p.ChatPersona,
		MaxToolRounds:   cfg.Chat.MaxToolRounds,
		ToolTimeout:     cfg.ToolTimeout,
		ProviderTimeout: cfg.Chat.Timeout,
		Logger:          logger,
	}
	if p.ChatProvider != nil {
		chatOpts.Provider = p.ChatProvider
		chatOpts.Budget, chatOpts.Breaker = p.ChatBudget, p.ChatBreaker
		if chatOpts.Budget == nil {
			chatOpts.Budget = budget.New(p.DB.Pool, budgetOptions(cfg, "llm", cfg.Chat.DailyTokenBudget, cfg.Chat.PricePerMTok, p.FairUseCounts, logger))
		}
	}
	chat, err := assistant.New(chatOpts)
	if err != nil {
		return nil, fmt.Errorf("app.Wire: %w", err)
	}
	return server.New(cfg, server.Options{DB: p.DB, Logger: logger, Edge: edge, Registry: registry, Chat: chat,
		Usage: p.Usage, Bookings: p.Bookings, Reindex: p.Reindex, Insights: counts, Pressure: p.Pressure,
		ClientKeys: clientkey.New(clientSecret(cfg))})
}
