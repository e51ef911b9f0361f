package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/sitetools/sitetools/internal/app"
	"github.com/sitetools/sitetools/internal/budget"
	"github.com/sitetools/sitetools/internal/config"
	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/internal/logs"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// The search section (runScaleSearch): search_site as served, over HTTP, on the
// generated site of 10 000 pages, with the query's embedding from a fake provider (new
// queries) or from the cache (the same queries again), against a pure pgvector kNN query
// on the same HNSW index.

const (
	scaleRounds        = 4   // interleaved: baseline, uncached, cached
	scalePerRound      = 100 // queries per round and side
	scaleWarmups       = 20  // queries per side before the rounds, not measured
	scaleRecallQueries = 100
	scaleLatencyGoal   = 3.0 // p99 ≤ this × the baseline's p99
	scaleKNN           = 10  // the baseline's k, and the k of recall@k
	// scaleTyped is how many questions of a round are also typed, one instant search per
	// keystroke from the second character on, as <sitetools-search> asks while a visitor
	// types.
	scaleTyped = 15
)

// scaleSearch is the section's service, its baseline and what they run on.
type scaleSearch struct {
	env    sectionEnv
	dbURL  string
	meta   scaleMeta
	reused bool
	fake   *llmtest.Server
	cfg    config.Config
	base   *postgres.DB // the baseline's pool, opened as the service opens its own
	addr   string
	client *http.Client
	local  *llm.Local
}

func runScaleSearch(ctx context.Context, env sectionEnv) (_ sectionResult, err error) {
	defer func() { scaleFinished(env, scaleSearchName, err != nil) }()
	s := &scaleSearch{env: env, client: &http.Client{Timeout: 30 * time.Second}}
	if s.local, err = llm.NewLocal(hnswDims); err != nil {
		return sectionResult{}, err
	}
	if err := s.ensureIndex(ctx); err != nil {
		return sectionResult{}, err
	}
	stop, err := s.start(ctx)
	if err != nil {
		return sectionResult{}, err
	}
	defer stop()
	queries := scaleQueryTexts(scaleWarmups + scaleRounds*scalePerRound)
	vecs, err := s.vectors(ctx, queries)
	if err != nil {
		return sectionResult{}, err
	}
	lat, err := s.measure(ctx, queries, vecs)
	if err != nil {
		return sectionResult{}, err
	}
	recalled := scaleWarmups + scaleRecallQueries
	rec, err := s.recall(ctx, vecs[scaleWarmups:recalled])
	if err != nil {
		return sectionResult{}, err
	}
	planned := queries[scaleWarmups]
	plan, err := s.explain(ctx, planned, vecs[scaleWarmups])
	if err != nil {
		return sectionResult{}, err
	}
	return scaleSearchReport(s, lat, rec, planned.text, plan), nil
}

// ensureIndex reuses the scale database when it holds what the generator makes (the
// ingest section has just written it, or an earlier run did); otherwise it writes it
// here with sitesearch.Ingester and the local embedder, the code `ingest --dir` runs.
func (s *scaleSearch) ensureIndex(ctx context.Context) error {
	var err error
	if s.dbURL, err = createDatabase(ctx, s.env.adminURL, scaleDatabase); err != nil {
		return err
	}
	if _, err := postgres.Migrate(ctx, s.dbURL); err != nil {
		return err
	}
	if s.meta, s.reused, err = readScaleMetaAt(ctx, s.dbURL); err != nil || s.reused {
		return err
	}
	if s.dbURL, err = freshDatabase(ctx, s.env.adminURL, scaleDatabase); err != nil {
		return err
	}
	db, err := postgres.Open(ctx, s.dbURL, 4)
	if err != nil {
		return err
	}
	defer db.Close()
	dir, err := scaleCorpusDir(s.env.stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.env.stderr, "%s: ingesting the generated site (local embedder)\n", scaleSearchName)
	if err := llm.LoadTokenizer(); err != nil {
		return err
	}
	in := &sitesearch.Ingester{Index: postgres.NewSiteIndex(db, hnswDims), Embedder: s.local, Ledger: budget.NewLedger(db.Pool)}
	begin := time.Now()
	st, err := in.Sync(ctx, "dir:"+dir, sitesearch.DirWalk(dir, scaleBaseURL))
	if err != nil {
		return err
	}
	s.meta = scaleMeta{generator: scaleBuildKey(), pages: st.Pages, chunks: st.ChunksEmbedded + st.ChunksReused,
		how: "sitesearch.Ingester in the bench process (the code of `sitetools ingest --dir`, local embedder)", took: time.Since(begin),
		builtAt: time.Now()}
	return writeScaleMeta(ctx, db, s.meta)
}

func readScaleMetaAt(ctx context.Context, dbURL string) (scaleMeta, bool, error) {
	db, err := postgres.Open(ctx, dbURL, 2)
	if err != nil {
		return scaleMeta{}, false, err
	}
	defer db.Close()
	return readScaleMeta(ctx, db)
}

// start builds the service as serve does, on the scale database and the fake provider,
// serves it on loopback, and opens the baseline's pool.
func (s *scaleSearch) start(ctx context.Context) (stop func(), err error) {
	var stops stack
	stop = stops.run
	defer func() {
		if err != nil {
			stop()
		}
	}()
	if s.fake, err = llmtest.StartServer(hnswDims); err != nil {
		return stop, err
	}
	stops.push(s.fake.Close)
	// The fake provider embeds with the local algorithm; under the local model's name the
	// index's vectors and the queries' are of one model, as in production.
	env := map[string]string{
		"DATABASE_URL": s.dbURL, "LISTEN_ADDR": "127.0.0.1:0", "ADMIN_LISTEN_ADDR": "off", "RATE_LIMIT_PER_MINUTE": "0",
		"TOOL_MAX_CONCURRENT_PER_CLIENT": "0", "CHAT_MAX_CONCURRENT_PER_CLIENT": "0",
		"EMBEDDINGS_PROVIDER": "openai", "EMBEDDINGS_BASE_URL": s.fake.BaseURL(), "EMBEDDINGS_MODEL": llm.LocalModel,
		"EMBEDDINGS_DIMENSIONS": strconv.Itoa(hnswDims),
	}
	if s.cfg, err = config.Load(func(k string) string { return env[k] }); err != nil {
		return stop, err
	}
	if err = llm.LoadTokenizer(); err != nil {
		return stop, err
	}
	db, err := postgres.Open(ctx, s.dbURL, s.cfg.DatabaseMaxConns)
	if err != nil {
		return stop, err
	}
	stops.push(db.Close)
	// Every query of this run is new to the shared cache, whatever an earlier run asked.
	if _, err = db.Pool.Exec(ctx, `TRUNCATE embedding_cache`); err != nil {
		return stop, err
	}
	svc, err := app.Build(ctx, s.cfg, app.Options{DB: db, Logger: slog.New(logs.NewJSON(io.Discard, slog.LevelInfo))})
	if err != nil {
		return stop, err
	}
	stops.push(svc.Close)
	srv, addr, err := serve(svc.HTTP.Handler(), "")
	if err != nil {
		return stop, err
	}
	s.addr = addr
	stops.push(func() { shutdown(srv) })
	if s.base, err = postgres.Open(ctx, s.dbURL, s.cfg.DatabaseMaxConns); err != nil {
		return stop, err
	}
	stops.push(s.base.Close)
	return stop, nil
}

// scaleQuery is a generated question about one topic.
type scaleQuery struct {
	text  string
	topic int
}

// scaleQueryTexts generates n distinct questions: two to four of a topic's frequent
// words, sometimes with a word of its area or a phrase around them.
func scaleQueryTexts(n int) []scaleQuery {
	v := scaleVocabulary()
	rng := rand.New(rand.NewPCG(scaleSeed, 500_000))
	seen := map[string]bool{}
	var out []scaleQuery
	for len(out) < n {
		topic := rng.IntN(scaleAreas * scaleTopics)
		p := newScalePicker(rng, v, topic, topic)
		words := []string{}
		for len(words) < 2+rng.IntN(3) {
			if w := p.topicW[p.topic.Uint64()]; !slices.Contains(words, w) {
				words = append(words, w)
			}
		}
		if rng.IntN(3) == 0 {
			words = append(words, p.areaW[p.area.Uint64()])
		}
		text := strings.Join(words, " ")
		switch rng.IntN(4) {
		case 0:
			text = "how do I " + text
		case 1:
			text = "what is " + text
		}
		if !seen[text] {
			seen[text] = true
			out = append(out, scaleQuery{text: text, topic: topic})
		}
	}
	return out
}

// scaleLatencies are the samples of each side.
type scaleLatencies struct {
	baseline, uncached, cached []time.Duration
	instant                    []time.Duration // search_site mode instant, per keystroke
	instantFound               int             // keystrokes whose instant search found a page
	providerUncached           int             // provider requests while the uncached side ran
	providerCached             int
	providerInstant            int
	topicHits                  int // uncached answers whose first page is of the query's topic
}

// vectors are the queries' embeddings by the local embedder.
func (s *scaleSearch) vectors(ctx context.Context, queries []scaleQuery) ([]pgvector.Vector, error) {
	vecs := make([]pgvector.Vector, len(queries))
	for i, q := range queries {
		e, err := s.local.Embed(ctx, []string{q.text})
		if err != nil {
			return nil, err
		}
		vecs[i] = pgvector.NewVector(e.Vectors[0])
	}
	return vecs, nil
}

// measure runs the rounds, each side over the round's queries in turn, one at a time.
func (s *scaleSearch) measure(ctx context.Context, queries []scaleQuery, vecs []pgvector.Vector) (*scaleLatencies, error) {
	lat := &scaleLatencies{}
	fmt.Fprintf(s.env.stderr, "%s: %d rounds of %d queries per side\n", scaleSearchName, scaleRounds, scalePerRound)
	for r := -1; r < scaleRounds; r++ {
		lo, hi := scaleWarmups+r*scalePerRound, scaleWarmups+(r+1)*scalePerRound
		if r < 0 {
			lo, hi = 0, scaleWarmups // the warm-up round: measured, then dropped
		}
		var round scaleLatencies
		for i := lo; i < hi; i++ {
			d, err := s.knn(ctx, vecs[i])
			if err != nil {
				return nil, fmt.Errorf("baseline: %w", err)
			}
			round.baseline = append(round.baseline, d)
		}
		if err := s.servedRound(queries[lo:hi], &round); err != nil {
			return nil, err
		}
		if r >= 0 {
			lat.merge(round)
		}
	}
	return lat, nil
}

func (l *scaleLatencies) merge(r scaleLatencies) {
	l.baseline = append(l.baseline, r.baseline...)
	l.uncached = append(l.uncached, r.uncached...)
	l.cached = append(l.cached, r.cached...)
	l.instant = append(l.instant, r.instant...)
	l.instantFound += r.instantFound
	l.providerUncached += r.providerUncached
	l.providerCached += r.providerCached
	l.providerInstant += r.providerInstant
	l.topicHits += r.topicHits
}

// servedRound asks each query of the round twice over HTTP: new, then cached.
func (s *scaleSearch) servedRound(queries []scaleQuery, round *scaleLatencies) error {
	for _, pass := range []struct {
		name  string
		took  *[]time.Duration
		calls *int
	}{{"uncached", &round.uncached, &round.providerUncached}, {"cached", &round.cached, &round.providerCached}} {
		before := s.fake.Calls()
		for _, q := range queries {
			d, hits, err := s.call(q.text)
			if err != nil {
				return fmt.Errorf("search_site, %s: %w", pass.name, err)
			}
			*pass.took = append(*pass.took, d)
			if pass.name == "uncached" && len(hits) > 0 && strings.Contains(hits[0].URL, fmt.Sprintf("/area-%02d/topic-%02d/", q.topic/scaleTopics, q.topic%scaleTopics)) {
				round.topicHits++
			}
		}
		*pass.calls = s.fake.Calls() - before
	}
	before := s.fake.Calls()
	for _, q := range queries[:min(scaleTyped, len(queries))] {
		for i := 2; i <= len(q.text); i++ {
			d, hits, err := s.callArgs(map[string]any{"query": q.text[:i], "mode": sitesearch.ModeInstant, "limit": 8})
			if err != nil {
				return fmt.Errorf("search_site, instant: %w", err)
			}
			round.instant = append(round.instant, d)
			if len(hits) > 0 {
				round.instantFound++
			}
		}
	}
	round.providerInstant = s.fake.Calls() - before
	return nil
}

// call posts search_site once, as a browser's page would, and times it to the last
// byte of the answer.
func (s *scaleSearch) call(query string) (time.Duration, []sitesearch.Hit, error) {
	return s.callArgs(map[string]any{"query": query})
}

// callArgs posts search_site with args.
func (s *scaleSearch) callArgs(args map[string]any) (time.Duration, []sitesearch.Hit, error) {
	body, err := json.Marshal(map[string]any{"name": "search_site", "arguments": args})
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequest(http.MethodPost, "http://"+s.addr+"/api/chat/tools", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	begin := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	d := time.Since(begin)
	if err != nil {
		return 0, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, nil, fmt.Errorf("status %d: %.300s", resp.StatusCode, out)
	}
	if args["mode"] == sitesearch.ModeInstant {
		// A keystroke may find nothing: a stop word alone, a letter no common word that
		// goes with the others starts with.
		hits, err := instantResults(out)
		return d, hits, err
	}
	hits, err := searchResults(out, false)
	return d, hits, err
}

// instantResults are the results of an instant search_site call, which may be none.
func instantResults(body []byte) ([]sitesearch.Hit, error) {
	var res struct {
		IsError           bool `json:"isError"`
		StructuredContent *struct {
			Results []sitesearch.Hit `json:"results"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(body, &res); err != nil || res.IsError || res.StructuredContent == nil {
		return nil, fmt.Errorf("search_site, instant: %.300s", body)
	}
	return res.StructuredContent.Results, nil
}

// knnSQL is the baseline: the k nearest chunks by the expression the HNSW index is on.
func knnSQL() string {
	return fmt.Sprintf(`SELECT id FROM chunks ORDER BY embedding::vector(%d) <=> $1::vector(%[1]d) LIMIT %d`, hnswDims, scaleKNN)
}

func (s *scaleSearch) knn(ctx context.Context, v pgvector.Vector) (time.Duration, error) {
	begin := time.Now()
	rows, err := s.base.Pool.Query(ctx, knnSQL(), v)
	if err != nil {
		return 0, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	d := time.Since(begin)
	if err == nil && len(ids) != scaleKNN {
		err = fmt.Errorf("%d rows, want %d", len(ids), scaleKNN)
	}
	return d, err
}
