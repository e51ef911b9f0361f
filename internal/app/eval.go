package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitetools/sitetools/internal/budget"
	"github.com/sitetools/sitetools/internal/config"
	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/searcheval"
	"github.com/sitetools/sitetools/tools"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// Evaluation is search_site as `sitetools eval` runs it: the configured search behind the
// same cost guard as a visitor's (query embeddings through the budget, the caches and the
// ledger, on the eval channel), with metrics of its own, never served, from which it
// tells what a run cost. Nothing of a question is logged, counted by its text or stored.
type Evaluation struct {
	cfg      config.Config
	search   *Search
	synonyms *sitesearch.Synonyms
	metrics  *prometheus.Registry
	budget   *budget.Budget
	logger   *slog.Logger
}

// NewEvaluation builds the search of cfg on db for an evaluation; Close releases its
// budget's leases.
func NewEvaluation(ctx context.Context, cfg config.Config, db *postgres.DB, logger *slog.Logger) (*Evaluation, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// Nobody waits on a page for an evaluation: a query's vector is waited for as long as
	// ingest waits for a batch, so that a model that is slow to load (Ollama on a CPU) is
	// measured rather than its searches degraded to full-text.
	cfg.Embeddings.Timeout = max(cfg.Embeddings.Timeout, cfg.Embeddings.IngestTimeout)
	e := &Evaluation{cfg: cfg, metrics: prometheus.NewRegistry(), logger: logger}
	e.budget = budget.New(db.Pool, budgetOptions(cfg, "embedding", cfg.Embeddings.DailyTokenBudget, cfg.Embeddings.PricePerMTok, &fairUseCounts{}, logger))
	if err := e.budget.LoadRatios(ctx); err != nil {
		logger.Warn("could not read the providers' token ratios", "kind", "embedding", "err", err.Error())
	}
	brk, err := newBreaker("embedding", cfg.Embeddings.BreakerFailures, cfg.Embeddings.BreakerCooldown, e.metrics, logger)
	if err != nil {
		return nil, err
	}
	e.search, err = newSearch(ctx, cfg, db, searchParts{logger: logger, reg: e.metrics, pm: budget.NewProviderMetrics(e.metrics),
		budget: e.budget, breaker: brk})
	if err != nil {
		e.Close()
		return nil, err
	}
	if e.synonyms, err = LoadSynonyms(cfg.Search.SynonymsFile); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// Close writes what the budget holds pending and gives back its lease.
func (e *Evaluation) Close() { closeBudgets(e.logger, e.budget) }

// Index is the live index of the configured database.
func (e *Evaluation) Index() *postgres.SiteIndex { return e.search.Index }

// Searcher returns the searcher of questions on index: search_site as the tools serve it,
// its queries embedded with the model of index's vectors (sitesearch.LiveIndex; a
// Candidate's is the rebuild's), called through a registry of its own on the eval channel.
// It also returns that model; an index without vectors is an error.
func (e *Evaluation) Searcher(ctx context.Context, index *postgres.SiteIndex) (searcheval.Searcher, sitesearch.IndexModel, error) {
	m, _, ok, err := index.Live(ctx)
	if err != nil {
		return nil, m, err
	}
	if !ok {
		return nil, m, errors.New("the index holds no page: run sitetools ingest first")
	}
	ts, err := sitesearch.Tools(sitesearch.Options{
		Index: index, Embedder: e.search.Embedder, Synonyms: e.synonyms,
		MaxQueryChars: e.cfg.Search.MaxQueryChars, MaxQueryTokens: e.cfg.Search.MaxQueryTokens,
		// As serve does for the index's model: the local embedder gets the synonyms and
		// corrections in the text it embeds, a model the query as asked.
		LexicalEmbedder: m.Name == llm.LocalModel, RelevantDistance: e.cfg.Search.RelevantDistance,
	})
	if err != nil {
		return nil, m, err
	}
	// The tool's deadline leaves the query's wait whole (see embedcache's Timeout).
	reg := tools.NewRegistry(&tools.Options{Logger: e.logger, DefaultTimeout: 2*e.cfg.Embeddings.Timeout + 10*time.Second})
	for _, t := range ts {
		if err := reg.Add(t); err != nil {
			return nil, m, err
		}
	}
	return func(ctx context.Context, q searcheval.Question, limit int) ([]searcheval.Page, string, error) {
		return askSearch(ctx, reg, q.Question, limit)
	}, m, nil
}

// askSearch calls search_site on reg as the eval channel and returns its pages.
func askSearch(ctx context.Context, reg *tools.Registry, query string, limit int) ([]searcheval.Page, string, error) {
	args, _ := json.Marshal(map[string]any{"query": query, "limit": limit})
	res, err := reg.Call(tools.WithRequest(ctx, tools.Request{Channel: tools.ChannelEval}), "search_site", args)
	if te, ok := errors.AsType[*tools.Error](err); ok && (te.Code == tools.CodeQueryTooLong || te.Code == tools.CodeInvalidArguments) {
		return nil, "", &searcheval.Refused{Reason: te.Message}
	}
	if err != nil {
		return nil, "", err
	}
	if res.IsError {
		var text []string
		for _, c := range res.Content {
			text = append(text, c.Text)
		}
		return nil, "", &searcheval.Refused{Reason: strings.Join(text, " ")}
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return nil, "", err
	}
	var out struct {
		Results  []searcheval.Page `json:"results"`
		Degraded string            `json:"degraded"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, "", fmt.Errorf("search_site's result: %w", err)
	}
	return out.Results, out.Degraded, nil
}

// HasPage reports whether index holds a page named by path or URL, as get_page finds it,
// with or without a trailing slash.
func HasPage(index sitesearch.PageFinder) searcheval.PageLookup {
	return func(ctx context.Context, page string) (bool, error) {
		other := page + "/"
		if strings.HasSuffix(page, "/") {
			other = strings.TrimSuffix(page, "/")
		}
		for _, p := range []string{page, other} {
			found, err := sitesearch.FindPage(ctx, index, p)
			if err != nil || found != nil {
				return found != nil, err
			}
		}
		return false, nil
	}
}

// Cost is what the evaluation's searches have cost so far: provider calls and tokens as
// the ledger recorded them, and query vectors that came from a cache.
func (e *Evaluation) Cost() (searcheval.Cost, error) {
	families, err := e.metrics.Gather()
	if err != nil {
		return searcheval.Cost{}, err
	}
	var c searcheval.Cost
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			v := m.GetCounter().GetValue()
			switch f.GetName() {
			case "sitetools_embedding_queries_total":
				if s := labels["source"]; s == "memory" || s == "database" {
					c.CacheHits += int(v)
				}
			case "sitetools_provider_calls_total":
				switch labels["outcome"] {
				case budget.OutcomeOK:
					c.ProviderCalls += int(v)
				case budget.OutcomeError, budget.OutcomeUnknown:
					c.ProviderCalls += int(v)
					c.Failed += int(v)
				}
			case "sitetools_provider_tokens_total":
				c.Tokens += int64(v)
			case "sitetools_provider_cost_usd_total":
				c.CostUSD += v
			}
		}
	}
	return c, nil
}
