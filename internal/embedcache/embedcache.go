package embedcache

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgvector/pgvector-go"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"github.com/sitetools/sitetools/internal/budget"
	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/postgres/pgerr"
	"github.com/sitetools/sitetools/tools"
)

// Why a search ran without its vector half.
const (
	DegradedBudget      = "embedding_budget_exhausted"
	DegradedUnavailable = "embedding_unavailable"
)

// QueryEmbedderOptions configure a QueryEmbedder.
type QueryEmbedderOptions struct {
	Pool     *pgxpool.Pool
	Embedder llm.Embedder
	// QueryPrefix goes before every query sent to the model (its task prefix, e.g.
	// "search_query: "); the cache keys it with the query.
	QueryPrefix  string
	Budget       *budget.Budget
	Ledger       *budget.Ledger
	PricePerMTok float64       // USD per million tokens, for the ledger's estimate
	Timeout      time.Duration // one provider call, retries included (default 5s)
	CacheSize    int           // in-process entries (default 10 000)
	Logger       *slog.Logger
	Registerer   prometheus.Registerer // nil: no metrics
}

// QueryEmbedder embeds search queries behind the cost guard: an in-process LRU, then the
// shared PostgreSQL cache, then, once per distinct query in flight (single-flight), a
// budgeted and recorded provider call.
type QueryEmbedder struct {
	opts  QueryEmbedderOptions
	cache *lru.Cache[[32]byte, []float32]
	sf    singleflight.Group
	hits  *prometheus.CounterVec
	// degraded counts the searches that went without a query vector, by reason.
	degraded *prometheus.CounterVec
}

// NewQueryEmbedder checks opts and returns a QueryEmbedder.
func NewQueryEmbedder(opts QueryEmbedderOptions) (*QueryEmbedder, error) {
	if opts.Pool == nil || opts.Embedder == nil || opts.Budget == nil || opts.Ledger == nil {
		return nil, errors.New("embedcache.NewQueryEmbedder: pool, embedder, budget and ledger are required")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.CacheSize <= 0 {
		opts.CacheSize = 10_000
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	cache, err := lru.New[[32]byte, []float32](opts.CacheSize)
	if err != nil {
		return nil, fmt.Errorf("embedcache.NewQueryEmbedder: %w", err)
	}
	q := &QueryEmbedder{opts: opts, cache: cache}
	q.hits = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sitetools_embedding_queries_total",
		Help: "Query embeddings by where they came from: memory, database (shared cache), provider, or degraded.",
	}, []string{"source"})
	q.degraded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sitetools_search_degraded_total",
		Help: "Searches answered from full-text only, by reason (embedding_budget_exhausted, embedding_unavailable).",
	}, []string{"reason"})
	for _, reason := range []string{DegradedBudget, DegradedUnavailable} {
		q.degraded.WithLabelValues(reason)
	}
	if opts.Registerer != nil {
		for _, c := range []prometheus.Collector{q.hits, q.degraded} {
			if err := opts.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("embedcache.NewQueryEmbedder: %w", err)
			}
		}
	}
	return q, nil
}

// Model is the embedding model.
func (q *QueryEmbedder) Model() string { return q.opts.Embedder.Model() }

// Normalize is the form of a query that the cache keys: case, spacing and surrounding
// punctuation do not make a query new.
func Normalize(query string) string {
	f := strings.FieldsFunc(strings.ToLower(query), func(r rune) bool { return unicode.IsSpace(r) })
	return strings.TrimFunc(strings.Join(f, " "), func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) })
}

// CacheKey is SHA-256 of model, query prefix and normalised query: the text itself is
// never stored.
func CacheKey(model, prefix, query string) [32]byte {
	return sha256.Sum256([]byte(model + "\x00" + prefix + "\x00" + Normalize(query)))
}

type embedResult struct {
	vec      []float32
	degraded string
}

// EmbedQuery returns the query's vector, or nil and the reason search must degrade.
// It never fails because of the provider or the budget; err is for the database.
func (q *QueryEmbedder) EmbedQuery(ctx context.Context, tool, query string) ([]float32, string, error) {
	key := CacheKey(q.Model(), q.opts.QueryPrefix, query)
	if v, ok := q.cache.Get(key); ok {
		q.hits.WithLabelValues("memory").Inc()
		return v, "", nil
	}
	req := tools.RequestFrom(ctx)
	// Identical concurrent queries share one lookup and one provider call. The shared
	// work must not die with the first caller, so it runs on a detached context.
	ch := q.sf.DoChan(string(key[:]), func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), q.opts.Timeout+5*time.Second)
		defer cancel()
		return q.load(ctx, key, string(req.Channel), tool, query)
	})
	select {
	case <-ctx.Done():
		return nil, "", ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			return nil, "", r.Err
		}
		res := r.Val.(embedResult)
		if res.degraded != "" {
			q.degraded.WithLabelValues(res.degraded).Inc()
		}
		return res.vec, res.degraded, nil
	}
}

func (q *QueryEmbedder) load(ctx context.Context, key [32]byte, channel, tool, query string) (embedResult, error) {
	model := q.Model()
	var stored pgvector.Vector
	var stale bool
	err := q.opts.Pool.QueryRow(ctx, `SELECT embedding, used_at < now() - interval '1 day' FROM embedding_cache WHERE key = $1 AND model = $2`,
		key[:], model).Scan(&stored, &stale)
	switch {
	case err == nil:
		// Retention keeps what is used: mark the use, at most once a day per query.
		if stale {
			if _, err := q.opts.Pool.Exec(ctx, `UPDATE embedding_cache SET used_at = now() WHERE key = $1`, key[:]); err != nil {
				q.opts.Logger.Warn("embedding cache touch failed", "err", err.Error())
			}
		}
		v := stored.Slice()
		q.cache.Add(key, v)
		q.hits.WithLabelValues("database").Inc()
		if err := q.opts.Ledger.Record(ctx, budget.Entry{Kind: "embedding", Channel: channel, Tool: tool, Model: model, CacheHit: true, Outcome: "ok"}); err != nil {
			q.opts.Logger.Warn("ledger write failed", "err", err.Error())
		}
		return embedResult{vec: v}, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return embedResult{}, pgerr.Wrap("embedcache.EmbedQuery: cache", err)
	}

	// A conservative estimate of what is sent, the task prefix included: providers'
	// tokenizers differ a little from ours.
	sent := q.opts.QueryPrefix + query
	n := int64(llm.CountTokens(sent))
	estimate := n + n/4 + 8
	res, err := q.opts.Budget.Reserve(ctx, estimate)
	if errors.Is(err, budget.ErrBudgetExhausted) {
		q.hits.WithLabelValues("degraded").Inc()
		return embedResult{degraded: DegradedBudget}, nil
	}
	if err != nil {
		return embedResult{}, err
	}
	callCtx, cancel := context.WithTimeout(ctx, q.opts.Timeout)
	out, callErr := q.opts.Embedder.Embed(callCtx, []string{sent})
	cancel()
	if callErr == nil && (len(out.Vectors) != 1 || len(out.Vectors[0]) != q.opts.Embedder.Dimensions()) {
		callErr = fmt.Errorf("provider returned %d vectors for 1 query", len(out.Vectors))
	}
	if callErr != nil {
		// A provider that failed may still have charged; without its word we assume not.
		if err := res.Release(ctx); err != nil {
			q.opts.Logger.Warn("budget release failed", "err", err.Error())
		}
		if err := q.opts.Ledger.Record(ctx, budget.Entry{Kind: "embedding", Channel: channel, Tool: tool, Model: model, Outcome: "error"}); err != nil {
			q.opts.Logger.Warn("ledger write failed", "err", err.Error())
		}
		q.opts.Logger.Warn("embedding provider call failed; search degrades to full-text", "err", callErr.Error())
		q.hits.WithLabelValues("degraded").Inc()
		return embedResult{degraded: DegradedUnavailable}, nil
	}
	tokens := int64(out.Tokens)
	if tokens <= 0 {
		tokens = n
	}
	if err := res.Settle(ctx, tokens); err != nil {
		q.opts.Logger.Warn("budget settle failed", "err", err.Error())
	}
	if err := q.opts.Ledger.Record(ctx, budget.Entry{Kind: "embedding", Channel: channel, Tool: tool, Model: model,
		Tokens: int(tokens), CostUSD: float64(tokens) * q.opts.PricePerMTok / 1e6, Outcome: "ok"}); err != nil {
		q.opts.Logger.Warn("ledger write failed", "err", err.Error())
	}
	v := out.Vectors[0]
	if _, err := q.opts.Pool.Exec(ctx, `INSERT INTO embedding_cache (key, model, embedding) VALUES ($1, $2, $3)
		ON CONFLICT (key) DO UPDATE SET model = EXCLUDED.model, embedding = EXCLUDED.embedding, created_at = now(), used_at = now()`,
		key[:], model, pgvector.NewVector(v)); err != nil {
		q.opts.Logger.Warn("embedding cache write failed", "err", err.Error())
	}
	q.cache.Add(key, v)
	q.hits.WithLabelValues("provider").Inc()
	return embedResult{vec: v}, nil
}
