package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/sitetools/sitetools/internal/config"
	"github.com/sitetools/sitetools/internal/embedcache"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitetools/sitetools/internal/breaker"
	"github.com/sitetools/sitetools/internal/budget"
	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/tools"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// EmbedderUse is what an embedder is for: a search query is one input under a short
// deadline; ingest sends batches, and a model on a CPU may take a minute for one.
type EmbedderUse int

// The uses of an embedder.
const (
	// ForQueries: a search waits EMBEDDINGS_TIMEOUT for its query's vector, and the request
	// may take as long again to answer late (see embedcache.QueryEmbedderOptions.Timeout).
	ForQueries EmbedderUse = iota
	ForIngest              // EMBEDDINGS_INGEST_TIMEOUT a request of EMBEDDINGS_BATCH_SIZE inputs
)

// NewEmbedder returns the configured embedding provider for a use.
func NewEmbedder(cfg config.Embeddings, use EmbedderUse, logger *slog.Logger) (llm.Embedder, error) {
	switch cfg.Provider {
	case "openai":
		opts := llm.OpenAIOptions{
			BaseURL:        cfg.BaseURL,
			BaseURLSetting: "EMBEDDINGS_BASE_URL",
			APIKey:         cfg.APIKey,
			Model:          cfg.Model,
			Dimensions:     cfg.Dimensions,
			Timeout:        2 * cfg.Timeout,
			Logger:         logger,
		}
		if use == ForIngest {
			opts.Timeout, opts.BatchSize = cfg.IngestTimeout, cfg.BatchSize
		}
		return llm.NewOpenAI(opts)
	default:
		return llm.NewLocal(cfg.Dimensions)
	}
}

// NewIngester returns the ingester of the configured embeddings into db's index, each
// embedding call recorded in the ledger.
func NewIngester(cfg config.Embeddings, db *postgres.DB, logger *slog.Logger) (*sitesearch.Ingester, error) {
	embedder, err := NewEmbedder(cfg, ForIngest, logger)
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	return &sitesearch.Ingester{
		Index:        postgres.NewSiteIndex(db, embedder.Dimensions()),
		Embedder:     embedder,
		Ledger:       budget.NewLedger(db.Pool),
		PricePerMTok: cfg.PricePerMTok,
		Prefixes:     cfg.Prefixes,
		BatchSize:    cfg.BatchSize,
	}, nil
}

// Search is search_site's machinery: the index, the embedder behind the cost guard, the
// embedding budget and ledger, and the tools (search_site, get_page).
type Search struct {
	Index    *postgres.SiteIndex
	Embedder *embedcache.QueryEmbedder
	Budget   *budget.Budget
	Ledger   *budget.Ledger
	Tools    []tools.Tool
}

// searchParts are what newSearch takes from Build.
type searchParts struct {
	logger  *slog.Logger
	reg     prometheus.Registerer
	pm      *budget.ProviderMetrics
	budget  *budget.Budget
	breaker *breaker.Breaker
}

func newSearch(ctx context.Context, cfg config.Config, db *postgres.DB, p searchParts) (*Search, error) {
	logger := p.logger
	embedder, err := NewEmbedder(cfg.Embeddings, ForQueries, logger)
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	index := postgres.NewSiteIndex(db, embedder.Dimensions())
	model := sitesearch.IndexModel{Name: embedder.Model(), Dimensions: embedder.Dimensions(),
		QueryPrefix: cfg.Embeddings.Prefixes.Query, DocumentPrefix: cfg.Embeddings.Prefixes.Document}
	if err := index.CheckModel(ctx, model); err != nil {
		var mismatch *sitesearch.ErrModelMismatch
		if errors.As(err, &mismatch) {
			// Searches embed their queries with the index's model until a rebuild for the
			// configured one switches (serve's next sync, POST /admin/reindex, or
			// `sitetools ingest --reindex`).
			logger.Warn("the search index was built with another model; searches use its model until a rebuild switches to the configured one",
				"index", mismatch.Have.String(), "configured", mismatch.Want.String())
		} else {
			// The database is down: the check runs again at ingest; serve and recover.
			logger.Warn("could not check the search index's model", "err", err.Error())
		}
	}
	s := &Search{
		Index:  index,
		Budget: p.budget,
		Ledger: budget.NewLedger(db.Pool).WithMetrics(p.pm),
	}
	s.Embedder, err = embedcache.NewQueryEmbedder(embedcache.QueryEmbedderOptions{
		Pool: db.Pool, Embedder: embedder, QueryPrefix: cfg.Embeddings.Prefixes.Query, Budget: s.Budget, Ledger: s.Ledger,
		PricePerMTok: cfg.Embeddings.PricePerMTok, Timeout: cfg.Embeddings.Timeout, Breaker: p.breaker,
		EmbedderFor: func(model string, dims int) (llm.Embedder, error) {
			return embedderFor(cfg.Embeddings, model, dims, logger)
		},
		Logger: logger, Registerer: p.reg,
	})
	if err != nil {
		return nil, err
	}
	synonyms, err := LoadSynonyms(cfg.Search.SynonymsFile)
	if err != nil {
		return nil, err
	}
	s.Tools, err = sitesearch.Tools(sitesearch.Options{
		Index: index, Embedder: s.Embedder, Synonyms: synonyms,
		MaxQueryChars: cfg.Search.MaxQueryChars, MaxQueryTokens: cfg.Search.MaxQueryTokens,
		LexicalEmbedder: cfg.Embeddings.Provider == "local", RelevantDistance: cfg.Search.RelevantDistance,
	})
	return s, err
}

// embedderFor is the query embedder of an index made by another model than the configured
// one: the built-in local embedder for its own vectors, else the configured provider's
// model. The local provider makes no other model's vectors.
func embedderFor(cfg config.Embeddings, model string, dims int, logger *slog.Logger) (llm.Embedder, error) {
	if model == llm.LocalModel {
		return llm.NewLocal(dims)
	}
	if cfg.Provider != "openai" {
		return nil, fmt.Errorf("the index's model %s is not the built-in local one: set EMBEDDINGS_PROVIDER=openai and EMBEDDINGS_BASE_URL to its provider", model)
	}
	cfg.Model, cfg.Dimensions = model, dims
	return NewEmbedder(cfg, ForQueries, logger)
}

// LoadSynonyms reads SEARCH_SYNONYMS_FILE; "" is none. Every problem of the file is
// reported, each with its line.
func LoadSynonyms(path string) (*sitesearch.Synonyms, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("SEARCH_SYNONYMS_FILE: %w", err)
	}
	defer f.Close()
	s, err := sitesearch.ParseSynonyms(f)
	if err != nil {
		return nil, fmt.Errorf("SEARCH_SYNONYMS_FILE %s:\n%w", path, err)
	}
	return s, nil
}

// VectorSearch is the pool option that sets SEARCH_EF_SEARCH and SEARCH_ITERATIVE_SCAN on
// every connection; a configuration without the search area gets postgres' defaults.
func VectorSearch(cfg config.Config) postgres.Option {
	return postgres.WithVectorSearch(postgres.VectorSearch{EFSearch: cfg.Search.EFSearch, IterativeScan: cfg.Search.IterativeScan})
}
