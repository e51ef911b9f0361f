package embedcache

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"github.com/sitetools/sitetools/internal/breaker"
	"github.com/sitetools/sitetools/internal/budget"
	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/tools"
)

// Why a search ran without its vector half.
const (
	DegradedBudget      = "embedding_budget_exhausted"
	DegradedClientShare = "embedding_client_share_spent" // this client's daily share is spent
	DegradedPaced       = "embedding_budget_paced"       // the budget's paced ceiling refused
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
	PricePerMTok float64 // USD per million tokens, for the ledger's estimate
	// Timeout is how long a search waits for its query's vector (default 5s). A provider
	// call that takes longer is left to run as long again: the search degrades at once,
	// and a late answer settles what the provider billed and fills the cache.
	Timeout time.Duration
	// EmbedderFor returns the provider's embedder of another model and dimension: the
	// one the live index was built with, while it is not the configured one (a rebuild
	// for the configured one under way). Nil: queries are embedded with Embedder alone.
	EmbedderFor func(model string, dims int) (llm.Embedder, error)
	// Breaker keeps calls off a provider that is down (nil: none).
	Breaker    *breaker.Breaker
	CacheSize  int // in-process entries (default 10 000)
	Logger     *slog.Logger
	Registerer prometheus.Registerer // nil: no metrics
}

// QueryEmbedder embeds search queries behind the cost guard: an in-process LRU, then the
// shared PostgreSQL cache, then, once per distinct query in flight across all replicas
// (single-flight, see fetch.go), a budgeted and recorded provider call behind the
// provider's circuit breaker.
type QueryEmbedder struct {
	opts QueryEmbedderOptions
	def  target // the configured model
	// others are the embedders of other models (EmbedderFor), by model and dimension.
	others sync.Map // string → llm.Embedder
	cache  *lru.Cache[[32]byte, []float32]
	sf     singleflight.Group
	hits   *prometheus.CounterVec
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
	q := &QueryEmbedder{opts: opts, cache: cache, def: target{embedder: opts.Embedder, prefix: opts.QueryPrefix}}
	q.hits = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sitetools_embedding_queries_total",
		Help: "Query embeddings by where they came from: memory, database (shared cache), provider, or degraded.",
	}, []string{"source"})
	q.degraded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sitetools_search_degraded_total",
		Help: "Searches answered from full-text only, by reason (embedding_budget_exhausted, embedding_client_share_spent, embedding_budget_paced, embedding_unavailable).",
	}, []string{"reason"})
	for _, reason := range []string{DegradedBudget, DegradedClientShare, DegradedPaced, DegradedUnavailable} {
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

// CacheKey is SHA-256 of model, dimension, query prefix and normalised query: the text
// itself is never stored. The dimension is part of it because one model makes vectors of
// several lengths (OpenAI's text-embedding-3, the local embedder): an index rebuilt for
// another dimension of the same model, or compared with one, must not be sent a cached
// vector of the other length.
func CacheKey(model string, dims int, prefix, query string) [32]byte {
	return sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%s\x00%s", model, dims, prefix, Normalize(query))))
}

type embedResult struct {
	vec      []float32
	degraded string
}

// EmbedQuery returns the query's vector, or nil and the reason search must degrade.
// It never fails because of the provider or the budget; err is for the database. It
// waits at most the Timeout for the provider: the call may go on to settle and cache a
// late answer, but the search does not wait for it.
func (q *QueryEmbedder) EmbedQuery(ctx context.Context, tool, query string) ([]float32, string, error) {
	return q.embed(ctx, q.def, tool, query)
}

// target is a model queries are embedded with, and its query prefix.
type target struct {
	embedder llm.Embedder
	prefix   string
}

func (t target) model() string { return t.embedder.Model() }

// EmbedQueryAs is EmbedQuery with the model, dimension and query prefix the live index
// was built with, for a search to compare like with like while they are not the
// configured ones; the configured ones are EmbedQuery's. Without EmbedderFor, or when it
// fails, the search degrades (embedding_unavailable).
func (q *QueryEmbedder) EmbedQueryAs(ctx context.Context, tool, query, model string, dims int, queryPrefix string) ([]float32, string, error) {
	if model == q.def.model() && dims == q.def.embedder.Dimensions() && queryPrefix == q.def.prefix {
		return q.embed(ctx, q.def, tool, query)
	}
	key := fmt.Sprintf("%s\x00%d", model, dims)
	e, ok := q.others.Load(key)
	if !ok && q.opts.EmbedderFor != nil {
		made, err := q.opts.EmbedderFor(model, dims)
		if err != nil {
			q.opts.Logger.Warn("no embedder for the live index's model; search degrades to full-text", "model", model, "err", err.Error())
		} else {
			e, _ = q.others.LoadOrStore(key, made)
			ok = true
		}
	}
	if !ok {
		q.hits.WithLabelValues("degraded").Inc()
		q.degraded.WithLabelValues(DegradedUnavailable).Inc()
		return nil, DegradedUnavailable, nil
	}
	return q.embed(ctx, target{embedder: e.(llm.Embedder), prefix: queryPrefix}, tool, query)
}

// embed is EmbedQuery for the model t.
func (q *QueryEmbedder) embed(ctx context.Context, t target, tool, query string) ([]float32, string, error) {
	key := CacheKey(t.model(), t.embedder.Dimensions(), t.prefix, query)
	if v, ok := q.cache.Get(key); ok {
		q.hits.WithLabelValues("memory").Inc()
		return v, "", nil
	}
	req := tools.RequestFrom(ctx)
	began := time.Now()
	// Identical concurrent queries share one lookup and one provider call. The shared
	// work must not die with the first caller, so it runs on a detached context: the
	// search's wait and as long again for a late answer, and time for the database.
	ch := q.sf.DoChan(string(key[:]), func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*q.opts.Timeout+5*time.Second)
		defer cancel()
		return q.load(ctx, callInfo{key: key, t: t, channel: string(req.Channel), tool: tool, query: query, began: began})
	})
	wait := time.NewTimer(q.opts.Timeout + min(q.opts.Timeout/4, dbSlack))
	defer wait.Stop()
	select {
	case <-ctx.Done():
		return nil, "", ctx.Err()
	case <-wait.C:
		q.hits.WithLabelValues("degraded").Inc()
		q.degraded.WithLabelValues(DegradedUnavailable).Inc()
		return nil, DegradedUnavailable, nil
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

// dbSlack is the most a search waits beyond the Timeout for the database work around the
// provider call (cache, claim, budget, ledger); a quarter of a shorter Timeout.
const dbSlack = 250 * time.Millisecond
