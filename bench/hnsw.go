package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgvector/pgvector-go"

	"github.com/sitetools/sitetools/internal/postgres"
)

// The HNSW recall measurement: vectors in tables of their own database, indexed as the
// service indexes chunks.embedding, queried with the ordering of search_site's vector
// half, against exact search by the same query on a sequential scan. Three datasets:
// site-shaped vectors (bench/hnsw_site.go), shaped as a sentence model's vectors of a
// site's chunks are, on which the goal is judged, with and without search_site's
// language and path filters; a Gaussian mixture of isotropic clusters; and uniformly
// random directions, the worst case. The last two are shown for information.
const (
	hnswName     = "HNSW recall@10"
	hnswDatabase = "sitetools_bench_hnsw"
	hnswDims     = 384
	hnswK        = 10
	recallGoal   = 0.95
	// hnswBuildMemory lets the graph be built in memory: a session setting that changes
	// how fast the index is built, not the index.
	hnswBuildMemory = "1GB"
	// The mixture: mixCentres random unit centres; each vector is a centre plus isotropic
	// normal noise of mixSigma per coordinate, normalised. mixNoise is the noise's
	// expected length relative to the centre's: at 1 (σ = 1/√384) the clusters are so far
	// apart that recall is 1.000 from ef_search 40 on and the goal would judge nothing; at
	// 2 a query's nearest neighbours are barely nearer than its cluster's other members,
	// harder than embeddings of real text.
	mixCentres = 1000
	mixNoise   = 2
)

var mixSigma = mixNoise / math.Sqrt(hnswDims)

// hnswDataset is one table of vectors and how its rows and queries follow from the seed.
type hnswDataset struct {
	key   string // "site", "mixture", "uniform"
	table string
	index string
	// generator names how the vectors follow from the seed; change it with the code.
	generator string
	gated     bool // the goal is judged on it
	// rows and queries return a generator of vectors for the seed: each call fills buf
	// with the next vector and returns it.
	rows, queries func(seed uint64) func(buf []float32) []float32
	about         string // what the vectors are, for the report
	// meta, when set, gives row id (from 1) a language and a path: the table has them as
	// columns, and the filtered queries of search_site are measured on it.
	meta func(id int) (lang, path string)
}

func hnswDatasets() []hnswDataset {
	return []hnswDataset{
		{
			key:       "site",
			table:     "bench_vectors_site",
			index:     "bench_vectors_site_embedding_hnsw_384",
			generator: siteGenerator,
			gated:     true,
			rows:      siteRowsOf,
			queries: func(seed uint64) func([]float32) []float32 {
				next := siteQueriesOf(seed)
				return func(buf []float32) []float32 { return append(buf[:0], next().vec...) }
			},
			meta:  siteRowMeta,
			about: siteAbout(),
		},
		{
			key:   "mixture",
			table: "bench_vectors_mixture",
			index: "bench_vectors_mixture_embedding_hnsw_384",
			generator: fmt.Sprintf("mixture v1: %d centres unit pcg(seed, 2); row pcg(seed, 3), query pcg(seed, 4): "+
				"centre IntN(%[1]d) + %.6f·normal per coordinate, normalised, float32", mixCentres, mixSigma),
			gated:   true,
			rows:    func(seed uint64) func([]float32) []float32 { return mixture(seed, 3) },
			queries: func(seed uint64) func([]float32) []float32 { return mixture(seed, 4) },
			about: fmt.Sprintf("a Gaussian mixture, clustered as embeddings of a site's text are: %d centres drawn uniformly from the "+
				"unit sphere (standard normal coordinates, normalised, pcg(seed, 2)); each vector picks a centre uniformly (IntN) and "+
				"adds isotropic normal noise of σ = %d/√%d = %.4f per coordinate (‖noise‖ ≈ %[2]d × ‖centre‖), then is normalised to "+
				"unit length and stored as float32; rows from pcg(seed, 3), queries drawn from the same mixture on pcg(seed, 4), "+
				"so no query is a row of the table",
				mixCentres, mixNoise, hnswDims, mixSigma),
		},
		{
			key:       "uniform",
			table:     "bench_vectors",
			index:     "bench_vectors_embedding_hnsw_384",
			generator: "pcg(seed, 0) normal, normalised, float32",
			rows:      func(seed uint64) func([]float32) []float32 { return uniform(seed, 0) },
			queries:   func(seed uint64) func([]float32) []float32 { return uniform(seed, 1) },
			about: "uniformly random directions: standard normal coordinates, normalised, float32; rows from pcg(seed, 0), " +
				"queries alike from pcg(seed, 1)",
		},
	}
}

// query is the kNN query on both sides: search_site's ordering expression, so that the
// planner can use the expression index exactly as it does for the service.
func (d hnswDataset) query() string {
	return fmt.Sprintf(`SELECT id FROM %s ORDER BY embedding::vector(%[2]d) <=> $1::vector(%[2]d) LIMIT %[3]d`, d.table, hnswDims, hnswK)
}

func uniform(seed, stream uint64) func([]float32) []float32 {
	rng := rand.New(rand.NewPCG(seed, stream))
	return func(buf []float32) []float32 { return randomUnit(rng, buf) }
}

// mixture draws from the Gaussian mixture of hnswDatasets: the centres come from
// pcg(seed, 2) whatever the stream, the picks and the noise from pcg(seed, stream).
func mixture(seed, stream uint64) func([]float32) []float32 {
	crng := rand.New(rand.NewPCG(seed, 2))
	centres := make([][]float32, mixCentres)
	for i := range centres {
		centres[i] = randomUnit(crng, make([]float32, hnswDims))
	}
	rng := rand.New(rand.NewPCG(seed, stream))
	x := make([]float64, hnswDims)
	return func(buf []float32) []float32 {
		c := centres[rng.IntN(mixCentres)]
		var sum float64
		for i := range x {
			x[i] = float64(c[i]) + mixSigma*rng.NormFloat64()
			sum += x[i] * x[i]
		}
		inv := 1 / math.Sqrt(sum)
		for i := range buf {
			buf[i] = float32(x[i] * inv)
		}
		return buf
	}
}

type hnswSettings struct {
	rows, queries int
	seed          uint64
	efSearch      []int
}

// hnswLevel is recall and latency at one hnsw.ef_search.
type hnswLevel struct {
	ef       int
	recall   float64 // mean over queries of |index top k ∩ exact top k| / k
	worst    float64 // the lowest of one query
	poor     int     // queries that found fewer than half of their exact top k
	p50, p99 time.Duration
	// With a filter: the mean number of candidates that came back (of hnswCandidates),
	// and how many queries got fewer than k.
	returned float64
	short    int
}

type hnswResult struct {
	d         hnswDataset
	s         hnswSettings
	serviceEF int // hnsw.ef_search on a connection opened as the service opens its own
	// serviceScan is hnsw.iterative_scan on such a connection.
	serviceScan string
	// With a dataset's meta: its filtered queries, and its structure.
	filtered  []*hnswFiltered
	structure *siteStructure
	built     bool
	loadTime  time.Duration
	buildTime time.Duration
	builtAt   time.Time
	notices   []string // from CREATE INDEX
	workers   string   // max_parallel_maintenance_workers during the build
	exactP50  time.Duration
	exactP99  time.Duration
	plans     [2]string // the plan's top node: index side, exact side
	levels    []hnswLevel
	// Mean cosine similarity of a query to its exact 1st and 10th neighbour, and to
	// rows picked without regard to the query: how much nearer a neighbour is.
	simFirst, simTenth, simAny float64
}

func (h *hnswResult) service() hnswLevel {
	for _, l := range h.levels {
		if l.ef == h.serviceEF {
			return l
		}
	}
	return hnswLevel{}
}

// pass is whether the index reaches the goal as the service queries it; a dataset
// without a goal passes.
func (h *hnswResult) pass() bool { return !h.d.gated || h.service().recall >= recallGoal }

// measureHNSW measures every dataset, the gated one first.
func measureHNSW(ctx context.Context, adminURL string, s hnswSettings, progress io.Writer) ([]*hnswResult, error) {
	dbURL, err := createDatabase(ctx, adminURL, hnswDatabase)
	if err != nil {
		return nil, err
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	_, err = conn.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS vector`)
	conn.Close(ctx)
	if err != nil {
		return nil, err
	}
	// Opened as the service opens its pool: pgvector's types are registered, and
	// hnsw.ef_search set, on connect.
	db, err := postgres.Open(ctx, dbURL, 4)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var out []*hnswResult
	for _, d := range hnswDatasets() {
		res, err := measureDataset(ctx, db, dbURL, d, s, progress)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.key, err)
		}
		out = append(out, res)
	}
	return out, nil
}

func measureDataset(ctx context.Context, db *postgres.DB, dbURL string, d hnswDataset, s hnswSettings, progress io.Writer) (*hnswResult, error) {
	res := &hnswResult{d: d, s: s}
	if err := ensureVectors(ctx, db, dbURL, d, s, res, progress); err != nil {
		return nil, err
	}
	var err error
	if res.serviceEF, res.serviceScan, err = serviceVectorSearch(ctx, db); err != nil {
		return nil, err
	}

	queries := make([]pgvector.Vector, s.queries)
	next := d.queries(s.seed)
	for i := range queries {
		queries[i] = pgvector.NewVector(next(make([]float32, hnswDims)))
	}

	c, err := db.Pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Release()
	if res.plans, err = checkPlans(ctx, c.Conn(), d, queries[0]); err != nil {
		return nil, err
	}

	fmt.Fprintf(progress, "%s, %s: exact top %d of %d queries (sequential scan)\n", hnswName, d.key, hnswK, len(queries))
	exact, err := exactTop(ctx, c, d, queries, res)
	if err != nil {
		return nil, err
	}
	if err := similarities(ctx, c, d, s, queries, exact, res); err != nil {
		return nil, err
	}
	efs := slices.Clone(s.efSearch)
	efs = append(efs, res.serviceEF)
	slices.Sort(efs)
	efs = slices.Compact(efs)
	for _, ef := range efs {
		l, err := measureLevel(ctx, c, d, queries, exact, ef)
		if err != nil {
			return nil, err
		}
		res.levels = append(res.levels, l)
		fmt.Fprintf(progress, "%s, %s: ef_search %d: recall %.3f, p50 %s\n", hnswName, d.key, ef, l.recall, duration(l.p50))
	}
	if d.meta != nil {
		if res.filtered, err = measureFiltered(ctx, c, d, s, efs, progress); err != nil {
			return nil, err
		}
		st := measureSiteStructure(s.seed)
		res.structure = &st
	}
	// Back to the service's values before the connection returns to the pool.
	if _, err := c.Exec(ctx, fmt.Sprintf(`SET hnsw.ef_search = %d`, res.serviceEF)); err != nil {
		return nil, err
	}
	if _, err := c.Exec(ctx, `SET hnsw.iterative_scan = `+res.serviceScan); err != nil {
		return nil, err
	}
	return res, nil
}

// exactTop returns each query's exact top hnswK ids by a sequential scan, and records its
// latency.
func exactTop(ctx context.Context, c *pgxpool.Conn, d hnswDataset, queries []pgvector.Vector, res *hnswResult) ([][]int64, error) {
	exact := make([][]int64, len(queries))
	lat := make([]time.Duration, len(queries))
	for i, q := range queries {
		begin := time.Now()
		err := pgx.BeginFunc(ctx, c.Conn(), func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL enable_indexscan = off`); err != nil {
				return err
			}
			var err error
			exact[i], err = topIDs(ctx, tx, d, q)
			return err
		})
		lat[i] = time.Since(begin)
		if err != nil {
			return nil, fmt.Errorf("exact search: %w", err)
		}
	}
	slices.Sort(lat)
	res.exactP50, res.exactP99 = percentile(lat, 50), percentile(lat, 99)
	return exact, nil
}

// measureLevel is recall and latency of the index at one hnsw.ef_search.
func measureLevel(ctx context.Context, c *pgxpool.Conn, d hnswDataset, queries []pgvector.Vector, exact [][]int64, ef int) (hnswLevel, error) {
	// SET, not RESET, even at the service's value: RESET would undo the SET of
	// postgres.Open's AfterConnect and fall back to pgvector's default.
	if _, err := c.Exec(ctx, fmt.Sprintf(`SET hnsw.ef_search = %d`, ef)); err != nil {
		return hnswLevel{}, err
	}
	return level(ef, hnswK, exact, func(i int) ([]int64, time.Duration, error) {
		begin := time.Now()
		ids, err := topIDs(ctx, c, d, queries[i])
		if err != nil {
			return nil, 0, fmt.Errorf("index search: %w", err)
		}
		return ids, time.Since(begin), nil
	})
}

// level is the recall and latency of one hnsw.ef_search: search(i) returns query i's
// first k ids and how long it took, held against exact[i], its exact top k.
func level(ef, k int, exact [][]int64, search func(i int) ([]int64, time.Duration, error)) (hnswLevel, error) {
	l := hnswLevel{ef: ef, worst: 1}
	lat := make([]time.Duration, len(exact))
	for i := range exact {
		ids, took, err := search(i)
		if err != nil {
			return l, err
		}
		lat[i] = took
		r := overlap(ids, exact[i], k)
		l.recall += r / float64(len(exact))
		l.worst = min(l.worst, r)
		if r < 0.5 {
			l.poor++
		}
	}
	slices.Sort(lat)
	l.p50, l.p99 = percentile(lat, 50), percentile(lat, 99)
	return l, nil
}

// similarities reads the cosine similarity of each query to its exact 1st and 10th
// neighbour and to hnswK rows picked by id regardless of the query, and stores the means.
func similarities(ctx context.Context, c *pgxpool.Conn, d hnswDataset, s hnswSettings, queries []pgvector.Vector, exact [][]int64, res *hnswResult) error {
	sql := fmt.Sprintf(`SELECT id, (1 - (embedding::vector(%d) <=> $1::vector(%[1]d)))::float8 FROM %s WHERE id = ANY($2)`, hnswDims, d.table)
	n := 0
	for i, q := range queries {
		if len(exact[i]) < hnswK {
			continue
		}
		ids := slices.Clone(exact[i])
		others := make([]int64, hnswK)
		for j := range others {
			others[j] = int64((i*7919+j*104729)%s.rows) + 1
		}
		ids = append(ids, others...)
		rows, err := c.Query(ctx, sql, q, ids)
		if err != nil {
			return err
		}
		sim := map[int64]float64{}
		var id int64
		var v float64
		_, err = pgx.ForEachRow(rows, []any{&id, &v}, func() error { sim[id] = v; return nil })
		if err != nil {
			return err
		}
		res.simFirst += sim[exact[i][0]]
		res.simTenth += sim[exact[i][hnswK-1]]
		for _, j := range others {
			res.simAny += sim[j] / hnswK
		}
		n++
	}
	if n > 0 {
		res.simFirst, res.simTenth, res.simAny = res.simFirst/float64(n), res.simTenth/float64(n), res.simAny/float64(n)
	}
	return nil
}
