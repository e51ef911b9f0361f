package budget

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// ProviderMetrics counts the paid calls that ledgers record, on this replica: calls by
// kind and outcome, tokens and the estimated cost. Rates and daily increases of these
// summed over replicas give the bill as it accrues.
type ProviderMetrics struct {
	calls  *prometheus.CounterVec
	tokens *prometheus.CounterVec
	cost   *prometheus.CounterVec
}

// NewProviderMetrics registers the provider metrics with reg.
func NewProviderMetrics(reg prometheus.Registerer) *ProviderMetrics {
	m := &ProviderMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitetools_provider_calls_total",
			Help: "Calls to the paid providers by kind (embedding, llm) and outcome (ok; error: never reached the provider or refused by it; unknown: may have reached it, charged at its reservation; skipped: not made, the circuit was open); cache hits are not calls.",
		}, []string{"kind", "outcome"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitetools_provider_tokens_total",
			Help: "Tokens the paid providers counted, by kind.",
		}, []string{"kind"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sitetools_provider_cost_usd_total",
			Help: "Estimated cost of the paid calls in USD (tokens times *_PRICE_PER_MTOK), by kind.",
		}, []string{"kind"}),
	}
	reg.MustRegister(m.calls, m.tokens, m.cost)
	for _, kind := range []string{"embedding", "llm"} {
		for _, outcome := range []string{OutcomeOK, OutcomeError, OutcomeUnknown, OutcomeSkipped} {
			m.calls.WithLabelValues(kind, outcome)
		}
		m.tokens.WithLabelValues(kind)
		m.cost.WithLabelValues(kind)
	}
	return m
}

func (m *ProviderMetrics) observe(e Entry) {
	if m == nil || e.CacheHit {
		return
	}
	outcome := e.Outcome
	switch outcome {
	case OutcomeOK, OutcomeUnknown, OutcomeSkipped:
	default:
		outcome = OutcomeError
	}
	m.calls.WithLabelValues(e.Kind, outcome).Inc()
	m.tokens.WithLabelValues(e.Kind).Add(float64(max(e.Tokens, 0)))
	m.cost.WithLabelValues(e.Kind).Add(max(e.CostUSD, 0))
}

// UsageCollector exports today's budgets and cost from PostgreSQL at each scrape, the
// same figures on every replica (aggregate them with max, not sum):
// sitetools_budget_limit_tokens, _used_tokens, _reserved_tokens and, for a limited
// budget, _remaining_tokens, each by kind; and sitetools_cost_today_usd by kind, from
// the ledger. A scrape that cannot reach the database leaves them out (logged at debug:
// /readyz and its alert already report the database).
type UsageCollector struct {
	pool   *pgxpool.Pool
	limits map[string]int64 // kind → tokens per UTC day, 0: unlimited
	logger *slog.Logger
	now    func() time.Time

	// ceilings are the budgets' paced ceilings now, by kind (WithCeilings).
	ceilings map[string]func() int64

	limit, used, reserved, remaining, cost, ceiling, atShare *prometheus.Desc
}

// WithCeilings makes the collector export each kind's paced ceiling (Budget.Ceiling) as
// sitetools_budget_paced_ceiling_tokens, and returns it.
func (c *UsageCollector) WithCeilings(ceilings map[string]func() int64) *UsageCollector {
	c.ceilings = ceilings
	return c
}

// NewUsageCollector returns a collector of the budgets of the given kinds and their daily
// limits (0: unlimited). logger may be nil.
func NewUsageCollector(pool *pgxpool.Pool, limits map[string]int64, logger *slog.Logger) *UsageCollector {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, []string{"kind"}, nil)
	}
	return &UsageCollector{
		pool: pool, limits: limits, logger: logger, now: time.Now,
		limit:     desc("sitetools_budget_limit_tokens", "Today's token budget by kind (UTC day); 0 means unlimited."),
		used:      desc("sitetools_budget_used_tokens", "Tokens of today's budget used, by kind, shared by all replicas."),
		reserved:  desc("sitetools_budget_reserved_tokens", "Tokens of today's budget leased by replicas (calls in flight, spend about to be settled, and about a second of each replica's demand), by kind."),
		remaining: desc("sitetools_budget_remaining_tokens", "Tokens left in today's budget, by kind; only for limited budgets."),
		cost:      desc("sitetools_cost_today_usd", "Estimated cost of today's paid calls (UTC day) in USD, by kind, from the ledger."),
		ceiling:   desc("sitetools_budget_paced_ceiling_tokens", "How much of today's budget may be used or leased by now, by kind: with BUDGET_PACING the burst plus the rest released linearly over the day, else the limit; only for limited budgets."),
		atShare:   desc("sitetools_budget_clients_at_share", "Clients that reached their daily share of the budget today, by kind (shared by all replicas)."),
	}
}

// Describe implements prometheus.Collector.
func (c *UsageCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.limit, c.used, c.reserved, c.remaining, c.cost, c.ceiling, c.atShare} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: one query for every kind.
func (c *UsageCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	kinds := make([]string, 0, len(c.limits))
	for k := range c.limits {
		kinds = append(kinds, k)
	}
	day := c.now().UTC().Truncate(24 * time.Hour)
	rows, err := c.pool.Query(ctx, `
		SELECT k.kind, coalesce(b.used, 0), coalesce(b.reserved, 0), coalesce(l.cost, 0),
			(SELECT count(*) FROM client_shares s WHERE s.day = $2::date AND s.kind = k.kind AND s.reached)
		FROM unnest($1::text[]) AS k(kind)
		LEFT JOIN budgets b ON b.kind = k.kind AND b.day = $2::date
		LEFT JOIN (SELECT kind, sum(cost_usd)::float8 AS cost FROM ledger WHERE at >= $2 GROUP BY kind) l ON l.kind = k.kind`,
		kinds, day)
	if err != nil {
		c.logger.Debug("budget metrics: database unavailable", "err", err.Error())
		return
	}
	defer rows.Close()
	for rows.Next() {
		var kind string
		var used, reserved, atShare int64
		var cost float64
		if err := rows.Scan(&kind, &used, &reserved, &cost, &atShare); err != nil {
			c.logger.Debug("budget metrics: database unavailable", "err", err.Error())
			return
		}
		limit := c.limits[kind]
		ch <- prometheus.MustNewConstMetric(c.limit, prometheus.GaugeValue, float64(limit), kind)
		ch <- prometheus.MustNewConstMetric(c.used, prometheus.GaugeValue, float64(used), kind)
		ch <- prometheus.MustNewConstMetric(c.reserved, prometheus.GaugeValue, float64(reserved), kind)
		if limit > 0 {
			ch <- prometheus.MustNewConstMetric(c.remaining, prometheus.GaugeValue, float64(max(limit-used-reserved, 0)), kind)
			if f := c.ceilings[kind]; f != nil {
				ch <- prometheus.MustNewConstMetric(c.ceiling, prometheus.GaugeValue, float64(f()), kind)
			}
		}
		ch <- prometheus.MustNewConstMetric(c.atShare, prometheus.GaugeValue, float64(atShare), kind)
		ch <- prometheus.MustNewConstMetric(c.cost, prometheus.GaugeValue, cost, kind)
	}
	if err := rows.Err(); err != nil {
		c.logger.Debug("budget metrics: database unavailable", "err", err.Error())
	}
}
