package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/sitetools/sitetools/internal/app"
	"github.com/sitetools/sitetools/internal/config"
	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/internal/logs"
	"github.com/sitetools/sitetools/internal/postgres"
)

// Single-flight across replicas: identical new queries that arrive at once on several
// replicas of one database should cost one embedding call between them.
const (
	flightName     = "Single-flight across replicas (query embeddings, fake provider)"
	flightDatabase = "sitetools_bench_flight"
	flightModel    = "fake-embedding"
	flightDims     = 64
	// flightDelay is the fake provider's answer time: long enough for every request of a
	// burst to arrive while the first one's call is out.
	flightDelay    = 100 * time.Millisecond
	flightReplicas = 3
	flightBurst    = 12 // identical queries at once, spread evenly over the replicas
	flightRounds   = 20 // bursts per number of replicas, interleaved
)

// flightSetups are the numbers of replicas a burst is spread over: several, as the goal
// says, and one, where only the in-process single-flight is at work.
var flightSetups = [...]int{flightReplicas, 1}

// flightBench is the replicas on one database and their embedding provider.
type flightBench struct {
	fake     *llmtest.Server
	replicas []flightReplica
	client   *http.Client
	stop     func()
}

// flightReplica is one replica as serve runs it: its own pool, metrics and server.
type flightReplica struct {
	svc  *app.Service
	addr string
}

// flightAnswer is one search of a burst: where it ran, how long it took, and whether it
// had its query vector (not degraded).
type flightAnswer struct {
	replica int
	latency time.Duration
	vector  bool
}

// flightResult is one burst: the provider requests it cost, the replicas whose own
// call they were, and its answers; cached, the answers of the same burst repeated.
type flightResult struct {
	calls    int
	fetchers map[int]bool
	answers  []flightAnswer
	cached   []flightAnswer
}

func runFlight(ctx context.Context, env sectionEnv) (sectionResult, error) {
	b, err := startFlight(ctx, env)
	if err != nil {
		return sectionResult{}, err
	}
	defer b.stop()
	// Unmeasured: the keep-alive connections are opened, the code paths warmed.
	for _, n := range flightSetups {
		if _, err := b.burst(ctx, n, fmt.Sprintf("%s (warm-up, %d replicas)", searchQuery, n)); err != nil {
			return sectionResult{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	results := make([][]flightResult, len(flightSetups))
	for i := range flightRounds {
		for j := range flightSetups {
			si := (i + j) % len(flightSetups)
			n := flightSetups[si]
			// A question never asked before in this run: the shared cache was emptied.
			query := fmt.Sprintf("%s (burst %d, %d replicas)", searchQuery, i+1, n)
			res, err := b.burst(ctx, n, query)
			if err != nil {
				return sectionResult{}, fmt.Errorf("burst %d on %d replicas: %w", i+1, n, err)
			}
			// The same burst again, its vector now cached: what the searches take without
			// the provider and the single-flight.
			again, err := b.burst(ctx, n, query)
			if err != nil {
				return sectionResult{}, fmt.Errorf("burst %d again on %d replicas: %w", i+1, n, err)
			}
			res.cached = again.answers
			results[si] = append(results[si], res)
			fmt.Fprintf(env.stderr, "%s: burst %d/%d on %d replicas: %d provider calls, %d/%d with the vector\n",
				flightName, i+1, flightRounds, n, res.calls, res.vectors(), len(res.answers))
		}
	}
	return flightReport(results), nil
}

// startFlight empties the shared cache of a database of its own, ingests the demo site
// through the fake provider (once: later runs find nothing changed), and starts the
// replicas on it, each built by app.Build as serve builds it.
func startFlight(ctx context.Context, env sectionEnv) (b *flightBench, err error) {
	var stops stack
	b = &flightBench{stop: stops.run}
	defer func() {
		if err != nil {
			stops.run()
		}
	}()
	dbURL, err := createDatabase(ctx, env.adminURL, flightDatabase)
	if err != nil {
		return nil, err
	}
	if _, err := postgres.Migrate(ctx, dbURL); err != nil {
		return nil, err
	}
	if b.fake, err = llmtest.StartServer(flightDims); err != nil {
		return nil, err
	}
	stops.push(b.fake.Close)
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	cfg, err := inProcessConfig(root, dbURL, map[string]string{
		"EMBEDDINGS_PROVIDER": "openai", "EMBEDDINGS_BASE_URL": b.fake.BaseURL(), "EMBEDDINGS_MODEL": flightModel,
		"EMBEDDINGS_DIMENSIONS":         strconv.Itoa(flightDims),
		"EMBEDDINGS_DAILY_TOKEN_BUDGET": strconv.Itoa(ttftDailyBudget),
		"LLM_DAILY_TOKEN_BUDGET":        strconv.Itoa(ttftDailyBudget),
	})
	if err != nil {
		return nil, err
	}
	if err := llm.LoadTokenizer(); err != nil {
		return nil, err
	}
	logger := slog.New(logs.NewJSON(io.Discard, slog.LevelInfo))
	for i := range flightReplicas {
		db, err := postgres.Open(ctx, dbURL, cfg.DatabaseMaxConns)
		if err != nil {
			return nil, err
		}
		stops.push(db.Close)
		if i == 0 {
			if err := prepareFlightIndex(ctx, cfg, db, logger); err != nil {
				return nil, err
			}
			b.fake.SetDelay(flightDelay)
		}
		svc, err := app.Build(ctx, cfg, app.Options{DB: db, Logger: logger})
		if err != nil {
			return nil, err
		}
		stops.push(svc.Close)
		srv, addr, err := serve(svc.HTTP.Handler(), "")
		if err != nil {
			return nil, err
		}
		stops.push(func() { shutdown(srv) })
		b.replicas = append(b.replicas, flightReplica{svc: svc, addr: addr})
	}
	n := 2 * flightBurst
	b.client = &http.Client{Transport: &http.Transport{MaxIdleConns: n, MaxIdleConnsPerHost: n, DisableCompression: true}}
	stops.push(b.client.CloseIdleConnections)
	return b, nil
}

// prepareFlightIndex ingests the demo site with the fake provider's model and empties the
// shared cache of query vectors, so that every query of the run is new to it.
func prepareFlightIndex(ctx context.Context, cfg config.Config, db *postgres.DB, logger *slog.Logger) error {
	if _, err := ingestSite(ctx, cfg, db, logger); err != nil {
		return err
	}
	_, err := db.Pool.Exec(ctx, `TRUNCATE embedding_cache, embedding_claims`)
	return err
}

// burst sends flightBurst searches for query at once, spread evenly over the first n
// replicas, and returns what they cost the provider and how each was answered.
func (b *flightBench) burst(ctx context.Context, n int, query string) (flightResult, error) {
	body, err := json.Marshal(map[string]any{"name": "search_site", "arguments": map[string]any{"query": query, "limit": searchLimit}})
	if err != nil {
		return flightResult{}, err
	}
	before, err := b.providerFetches(n)
	if err != nil {
		return flightResult{}, err
	}
	calls := b.fake.Calls()
	res := flightResult{answers: make([]flightAnswer, flightBurst), fetchers: map[int]bool{}}
	errs := make([]error, flightBurst)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range flightBurst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := i % n
			<-start
			t0 := time.Now()
			vector, err := b.search(ctx, b.replicas[r].addr, body)
			res.answers[i] = flightAnswer{replica: r, latency: time.Since(t0), vector: vector}
			errs[i] = err
		}()
	}
	close(start)
	wg.Wait()
	res.calls = b.fake.Calls() - calls
	for _, err := range errs {
		if err != nil {
			return res, err
		}
	}
	after, err := b.providerFetches(n)
	for r := range after {
		if after[r] > before[r] {
			res.fetchers[r] = true
		}
	}
	return res, err
}

// providerFetches reads, for each of the first n replicas, how many query vectors it
// fetched from the provider itself (sitetools_embedding_queries_total{source="provider"}).
func (b *flightBench) providerFetches(n int) ([]float64, error) {
	out := make([]float64, n)
	for r := range n {
		src, err := embeddingSources(b.replicas[r].svc.Metrics)
		if err != nil {
			return nil, err
		}
		out[r] = src["provider"]
	}
	return out, nil
}

// search posts one search_site call to the public API at addr and reports whether its
// answer had the query's vector.
func (b *flightBench) search(ctx context.Context, addr string, body []byte) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/api/chat/tools", bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := b.client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	var res struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			Degraded string `json:"degraded"`
		} `json:"structuredContent"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || resp.StatusCode != http.StatusOK || res.IsError {
		return false, fmt.Errorf("search_site: status %d, isError %v, %v", resp.StatusCode, res.IsError, err)
	}
	return res.StructuredContent.Degraded == "", nil
}
