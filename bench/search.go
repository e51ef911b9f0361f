package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitetools/sitetools/internal/app"
	"github.com/sitetools/sitetools/internal/config"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// The search_site scenario asks the demo site one fixed question, one of the
// hand-written relevance questions (internal/fixtures/search_questions.json): it
// matches both halves of the hybrid search.
const (
	demoDir     = "deploy/demo/site"
	demoBaseURL = "http://bench.example"
	searchQuery = "How do I merge rankings from full-text search and embedding similarity?"
	searchLimit = 5
)

func searchScenarioName(conns int) string {
	return fmt.Sprintf("POST /api/chat/tools search_site, %d conn (cached embedding)", conns)
}

// ingestDemo ingests the demo site as `sitetools ingest --dir deploy/demo/site` does.
// After the first run nothing has changed and it makes no embedding call.
func ingestDemo(ctx context.Context, cfg config.Config, db *postgres.DB, logger *slog.Logger) (sitesearch.IngestStats, error) {
	if cfg.Embeddings.Provider != "local" {
		return sitesearch.IngestStats{}, fmt.Errorf("the bench ingests with the local embedder, not %q", cfg.Embeddings.Provider)
	}
	return ingestSite(ctx, cfg, db, logger)
}

// ingestSite ingests the demo site with the configured embeddings, whichever they are.
func ingestSite(ctx context.Context, cfg config.Config, db *postgres.DB, logger *slog.Logger) (sitesearch.IngestStats, error) {
	root, err := moduleRoot()
	if err != nil {
		return sitesearch.IngestStats{}, err
	}
	dir := filepath.Join(root, demoDir)
	in, err := app.NewIngester(cfg.Embeddings, db, logger)
	if err != nil {
		return sitesearch.IngestStats{}, err
	}
	st, err := in.Sync(ctx, "dir:"+dir, sitesearch.DirWalk(dir, demoBaseURL))
	if err != nil {
		return st, fmt.Errorf("ingest %s: %w", demoDir, err)
	}
	logger.Info("ingested the demo site", "stats", st.String())
	return st, nil
}

// searchScenario measures search_site through the public API against its own SQL run
// directly on a pool of base, both with the query's vector from the cache, with conns
// connections on each side. One call warms the cache first, as a repeated question in
// production finds it warm.
func searchScenario(ctx context.Context, svc *service, base *postgres.DB, conns int) (scenario, error) {
	args, err := json.Marshal(map[string]any{"name": "search_site", "arguments": map[string]any{"query": searchQuery, "limit": searchLimit}})
	if err != nil {
		return scenario{}, err
	}
	subject := target{
		label: "sitetools",
		addr:  svc.addr,
		req: request{method: http.MethodPost, path: "/api/chat/tools", body: args,
			header: http.Header{"Accept": {"application/json"}, "Content-Type": {"application/json"}}},
		want: http.StatusOK,
	}
	// Warm-up: the call that embeds the query and caches its vector (later ones find it).
	if _, err := searchViaAPI(subject); err != nil {
		return scenario{}, fmt.Errorf("search_site warm-up: %w", err)
	}
	vec, degraded, err := svc.svc.Search.Embedder.EmbedQuery(ctx, "search_site", searchQuery)
	if err != nil || vec == nil {
		return scenario{}, fmt.Errorf("search_site: the cached query vector: %v (degraded %q)", err, degraded)
	}
	index := postgres.NewSiteIndex(base, svc.cfg.Embeddings.Dimensions)
	direct := func(ctx context.Context) ([]sitesearch.Hit, error) {
		// Its statement, planned as SiteIndex.Search plans it.
		return index.Search(ctx, sitesearch.Query{Text: searchQuery, Vector: vec, Limit: searchLimit})
	}
	baseline := target{
		label: "pgx",
		do: func(ctx context.Context) error {
			_, err := direct(ctx)
			return err
		},
	}
	var before map[string]float64
	return scenario{
		name: searchScenarioName(conns),
		about: "search_site through the sitetools public API (JSON envelope, schema validation, token estimate, " +
			"cost guard's cache, the SQL, snippet bounds, output schema check, MCP-shaped JSON) vs postgres.SearchSQL " +
			"with the same parameters and cached vector run directly on a pgxpool, rows scanned",
		goal:     1.5,
		latency:  true,
		conns:    conns,
		subject:  subject,
		baseline: baseline,
		check: func() ([]string, error) {
			b, err := embeddingSources(svc.svc.Metrics)
			if err != nil {
				return nil, err
			}
			before = b
			got, err := searchViaAPI(subject)
			if err != nil {
				return nil, err
			}
			want, err := direct(ctx)
			if err != nil {
				return nil, err
			}
			if len(want) == 0 {
				return nil, errors.New("parity: the search finds nothing: is the demo site ingested?")
			}
			key := func(h sitesearch.Hit) string { return fmt.Sprintf("%s#%s %v", h.URL, h.Anchor, h.Score) }
			if !slices.Equal(mapSlice(got, key), mapSlice(want, key)) {
				return nil, fmt.Errorf("parity: search_site returns %q, the SQL %q", mapSlice(got, key), mapSlice(want, key))
			}
			pages := mapSlice(want, func(h sitesearch.Hit) string { return strings.TrimPrefix(h.URL, demoBaseURL) })
			return []string{fmt.Sprintf("both sides return the same %d pages in the same order with the same scores: %s "+
				"(query %q, limit %d)", len(want), strings.Join(pages, ", "), searchQuery, searchLimit)}, nil
		},
		after: func() []string {
			after, err := embeddingSources(svc.svc.Metrics)
			if err != nil {
				return []string{"query embeddings: " + err.Error()}
			}
			var parts []string
			for _, src := range []string{"memory", "database", "provider", "degraded"} {
				parts = append(parts, fmt.Sprintf("%.0f %s", after[src]-before[src], src))
			}
			return []string{"query embeddings of this scenario (parity check, warm-up, rounds; sitetools_embedding_queries_total by source): " +
				strings.Join(parts, ", ") + "; CPU per request is this process's only: PostgreSQL's, the same SQL on both sides, is not in it"}
		},
	}, nil
}

// searchViaAPI calls search_site once and returns its results, refusing a degraded search.
func searchViaAPI(t target) ([]sitesearch.Hit, error) {
	resp, body, err := probe(t)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("search_site: status %d: %s", resp.StatusCode, body)
	}
	return searchResults(body, false)
}

// embeddingSources reads the cost guard's counter of query embeddings by source.
func embeddingSources(reg *prometheus.Registry) (map[string]float64, error) {
	families, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "sitetools_embedding_queries_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "source" {
					out[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out, nil
}

func mapSlice[T, U any](xs []T, f func(T) U) []U {
	out := make([]U, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}
