package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgvector/pgvector-go"

	"github.com/sitetools/sitetools/internal/postgres"
)

// The HNSW recall measurement: random unit vectors in a table of their own database,
// indexed as the service indexes chunks.embedding, queried with the ordering of
// search_site's vector half, against exact search by the same query on a sequential scan.
const (
	hnswName     = "HNSW recall@10"
	hnswDatabase = "sitetools_bench_hnsw"
	hnswTable    = "bench_vectors"
	hnswIndex    = "bench_vectors_embedding_hnsw_384"
	hnswDims     = 384
	hnswK        = 10
	recallGoal   = 0.95
	// hnswGenerator names how the vectors follow from the seed; change it with the code.
	hnswGenerator = "pcg(seed, 0) normal, normalised, float32"
	// hnswBuildMemory lets the graph be built in memory: a session setting that changes
	// how fast the index is built, not the index.
	hnswBuildMemory = "1GB"
)

// hnswQuery is the kNN query on both sides: search_site's ordering expression, so that
// the planner can use the expression index exactly as it does for the service.
var hnswQuery = fmt.Sprintf(`SELECT id FROM %s ORDER BY embedding::vector(%[2]d) <=> $1::vector(%[2]d) LIMIT %[3]d`,
	hnswTable, hnswDims, hnswK)

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
	p50, p99 time.Duration
}

type hnswResult struct {
	s         hnswSettings
	serviceEF int // hnsw.ef_search on a connection opened as the service opens its own
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
}

func (h *hnswResult) service() hnswLevel {
	for _, l := range h.levels {
		if l.ef == h.serviceEF {
			return l
		}
	}
	return hnswLevel{}
}

// pass is whether the index reaches the goal as the service queries it.
func (h *hnswResult) pass() bool { return h.service().recall >= recallGoal }

func measureHNSW(ctx context.Context, adminURL string, s hnswSettings, progress io.Writer) (*hnswResult, error) {
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
	// Opened as the service opens its pool: pgvector's types are registered on connect.
	db, err := postgres.Open(ctx, dbURL, 4)
	if err != nil {
		return nil, err
	}
	defer db.Close()

	res := &hnswResult{s: s}
	if err := ensureVectors(ctx, db, dbURL, s, res, progress); err != nil {
		return nil, err
	}
	if res.serviceEF, err = defaultEFSearch(ctx, db); err != nil {
		return nil, err
	}

	queries := make([]pgvector.Vector, s.queries)
	rng := rand.New(rand.NewPCG(s.seed, 1)) // another stream than the table's
	for i := range queries {
		queries[i] = pgvector.NewVector(randomUnit(rng, make([]float32, hnswDims)))
	}

	c, err := db.Pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Release()
	if res.plans, err = checkPlans(ctx, c.Conn(), queries[0]); err != nil {
		return nil, err
	}

	fmt.Fprintf(progress, "%s: exact top %d of %d queries (sequential scan)\n", hnswName, hnswK, len(queries))
	exact := make([][]int64, len(queries))
	lat := make([]time.Duration, len(queries))
	for i, q := range queries {
		begin := time.Now()
		err := pgx.BeginFunc(ctx, c.Conn(), func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL enable_indexscan = off`); err != nil {
				return err
			}
			var err error
			exact[i], err = topIDs(ctx, tx, q)
			return err
		})
		lat[i] = time.Since(begin)
		if err != nil {
			return nil, fmt.Errorf("exact search: %w", err)
		}
	}
	slices.Sort(lat)
	res.exactP50, res.exactP99 = percentile(lat, 50), percentile(lat, 99)

	efs := slices.Clone(s.efSearch)
	efs = append(efs, res.serviceEF)
	slices.Sort(efs)
	for _, ef := range slices.Compact(efs) {
		// At the service's own value nothing is set, as on the service's connections.
		set := `RESET hnsw.ef_search`
		if ef != res.serviceEF {
			set = fmt.Sprintf(`SET hnsw.ef_search = %d`, ef)
		}
		if _, err := c.Exec(ctx, set); err != nil {
			return nil, err
		}
		l := hnswLevel{ef: ef, worst: 1}
		for i, q := range queries {
			begin := time.Now()
			ids, err := topIDs(ctx, c, q)
			lat[i] = time.Since(begin)
			if err != nil {
				return nil, fmt.Errorf("index search: %w", err)
			}
			r := overlap(ids, exact[i], hnswK)
			l.recall += r / float64(len(queries))
			l.worst = min(l.worst, r)
		}
		slices.Sort(lat)
		l.p50, l.p99 = percentile(lat, 50), percentile(lat, 99)
		res.levels = append(res.levels, l)
		fmt.Fprintf(progress, "%s: ef_search %d: recall %.3f, p50 %s\n", hnswName, ef, l.recall, duration(l.p50))
	}
	if _, err := c.Exec(ctx, `RESET hnsw.ef_search`); err != nil {
		return nil, err
	}
	return res, nil
}

// ensureVectors reuses the table when its meta row says it holds the rows this seed
// and size make and the index is valid; otherwise it loads and indexes them anew.
func ensureVectors(ctx context.Context, db *postgres.DB, dbURL string, s hnswSettings, res *hnswResult, progress io.Writer) error {
	pool := db.Pool
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS bench_meta (
		name text PRIMARY KEY, seed text NOT NULL, rows integer NOT NULL, dims integer NOT NULL, generator text NOT NULL,
		load_ms bigint NOT NULL, build_ms bigint NOT NULL, workers text NOT NULL, built_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return err
	}
	seed := strconv.FormatUint(s.seed, 10)
	var loadMS, buildMS int64
	err := pool.QueryRow(ctx, `SELECT m.load_ms, m.build_ms, m.workers, m.built_at FROM bench_meta m
		WHERE m.name = $1 AND m.seed = $2 AND m.rows = $3 AND m.dims = $4 AND m.generator = $5
		  AND EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = $6 AND i.indisvalid)`,
		hnswTable, seed, s.rows, hnswDims, hnswGenerator, hnswIndex).Scan(&loadMS, &buildMS, &res.workers, &res.builtAt)
	if err == nil {
		// The meta row could outlive a table changed by hand: count, and compare the first row.
		var n int
		var first pgvector.Vector
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+hnswTable).Scan(&n); err != nil {
			return err
		}
		if err := pool.QueryRow(ctx, `SELECT embedding FROM `+hnswTable+` WHERE id = 1`).Scan(&first); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		want := randomUnit(rand.New(rand.NewPCG(s.seed, 0)), make([]float32, hnswDims))
		if n == s.rows && slices.Equal(first.Slice(), want) {
			res.loadTime, res.buildTime = time.Duration(loadMS)*time.Millisecond, time.Duration(buildMS)*time.Millisecond
			fmt.Fprintf(progress, "%s: reusing %s (%d rows, seed %s, built %s)\n", hnswName, hnswTable, n, seed, res.builtAt.UTC().Format(time.DateTime))
			return nil
		}
	} else if !errors.Is(err, pgx.ErrNoRows) {
		return err
	}

	res.built = true
	fmt.Fprintf(progress, "%s: loading %d random %d-d vectors (seed %s)\n", hnswName, s.rows, hnswDims, seed)
	for _, stmt := range []string{
		`DELETE FROM bench_meta WHERE name = '` + hnswTable + `'`,
		`DROP TABLE IF EXISTS ` + hnswTable,
		// Untyped, as chunks.embedding: the dimension is in the index's cast.
		`CREATE TABLE ` + hnswTable + ` (id integer PRIMARY KEY, embedding vector NOT NULL)`,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			return err
		}
	}
	begin := time.Now()
	rng := rand.New(rand.NewPCG(s.seed, 0))
	buf := make([]float32, hnswDims)
	i := 0
	n, err := pool.CopyFrom(ctx, pgx.Identifier{hnswTable}, []string{"id", "embedding"}, pgx.CopyFromFunc(func() ([]any, error) {
		if i == s.rows {
			return nil, nil
		}
		i++
		return []any{i, pgvector.NewVector(randomUnit(rng, buf))}, nil
	}))
	if err != nil {
		return fmt.Errorf("COPY: %w", err)
	}
	if int(n) != s.rows {
		return fmt.Errorf("COPY: %d rows, want %d", n, s.rows)
	}
	res.loadTime = time.Since(begin)

	// A connection of its own, to collect the build's notices (such as the graph not
	// fitting in memory).
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return err
	}
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { res.notices = append(res.notices, n.Message) }
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `SET maintenance_work_mem = '`+hnswBuildMemory+`'`); err != nil {
		return err
	}
	if err := conn.QueryRow(ctx, `SHOW max_parallel_maintenance_workers`).Scan(&res.workers); err != nil {
		return err
	}
	fmt.Fprintf(progress, "%s: building %s (loaded in %s)\n", hnswName, hnswIndex, res.loadTime.Round(time.Millisecond))
	begin = time.Now()
	// The statement sitesearch's Store.prepare runs for chunks, on this table.
	if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE INDEX %s ON %s USING hnsw ((embedding::vector(%d)) vector_cosine_ops)`,
		hnswIndex, hnswTable, hnswDims)); err != nil {
		return fmt.Errorf("CREATE INDEX: %w", err)
	}
	res.buildTime = time.Since(begin)
	if _, err := conn.Exec(ctx, `ANALYZE `+hnswTable); err != nil {
		return err
	}
	res.builtAt = time.Now()
	_, err = pool.Exec(ctx, `INSERT INTO bench_meta (name, seed, rows, dims, generator, load_ms, build_ms, workers, built_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, hnswTable, seed, s.rows, hnswDims, hnswGenerator,
		res.loadTime.Milliseconds(), res.buildTime.Milliseconds(), res.workers, res.builtAt)
	return err
}

// defaultEFSearch is hnsw.ef_search on a fresh pool connection, where the service sets
// nothing: pgvector's default unless the server's configuration changes it.
func defaultEFSearch(ctx context.Context, db *postgres.DB) (int, error) {
	c, err := db.Pool.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer c.Release()
	var v string
	// The setting exists once pgvector's library is loaded in the session.
	if err := c.QueryRow(ctx, `SELECT ('[1,0]'::vector <=> '[0,1]'::vector)::text, current_setting('hnsw.ef_search')`).Scan(new(string), &v); err != nil {
		return 0, err
	}
	return strconv.Atoi(v)
}

// checkPlans makes sure the index side uses the HNSW index and the exact side does not,
// and returns the top node of each plan.
func checkPlans(ctx context.Context, conn *pgx.Conn, q pgvector.Vector) ([2]string, error) {
	var out [2]string
	plan := func(tx pgx.Tx) (string, error) {
		rows, err := tx.Query(ctx, `EXPLAIN `+hnswQuery, q)
		if err != nil {
			return "", err
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		return strings.Join(lines, "\n"), err
	}
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		p, err := plan(tx)
		if err != nil {
			return err
		}
		if !strings.Contains(p, "Index Scan using "+hnswIndex) {
			return fmt.Errorf("the kNN query does not use %s:\n%s", hnswIndex, p)
		}
		out[0] = planNode(p, "Index Scan")
		if _, err := tx.Exec(ctx, `SET LOCAL enable_indexscan = off`); err != nil {
			return err
		}
		if p, err = plan(tx); err != nil {
			return err
		}
		if strings.Contains(p, hnswIndex) {
			return fmt.Errorf("the exact query still uses %s:\n%s", hnswIndex, p)
		}
		out[1] = planNode(p, "Seq Scan")
		return nil
	})
	return out, err
}

// planNode returns the name of the first plan line containing node, without costs.
func planNode(plan, node string) string {
	for _, line := range strings.Split(plan, "\n") {
		if i := strings.Index(line, node); i >= 0 {
			s := line[i:]
			if j := strings.Index(s, "  ("); j >= 0 {
				s = s[:j]
			}
			return s
		}
	}
	return ""
}

func topIDs(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, v pgvector.Vector) ([]int64, error) {
	rows, err := q.Query(ctx, hnswQuery, v)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// overlap is |a ∩ b| / k.
func overlap(a, b []int64, k int) float64 {
	n := 0
	for _, x := range a {
		if slices.Contains(b, x) {
			n++
		}
	}
	return float64(n) / float64(k)
}

// randomUnit fills v with a direction drawn uniformly from the unit sphere: standard
// normal coordinates, normalised.
func randomUnit(r *rand.Rand, v []float32) []float32 {
	var sum float64
	x := make([]float64, len(v))
	for i := range x {
		x[i] = r.NormFloat64()
		sum += x[i] * x[i]
	}
	inv := 1 / math.Sqrt(sum)
	for i := range v {
		v[i] = float32(x[i] * inv)
	}
	return v
}

func (h *hnswResult) text(b *strings.Builder) {
	fmt.Fprintf(b, "%s: %s random unit vectors of %d dimensions, %d queries, goal ≥ %.2f at the service's ef_search (%d)\n\n",
		hnswName, thousands(h.s.rows), hnswDims, h.s.queries, recallGoal, h.serviceEF)
	rows := [][]string{{"ef_search", "recall@10", "worst query", "goal", "result", "index p50 / p99", "exact p50 / p99"}}
	reach := 0
	for _, l := range h.levels {
		ef := strconv.Itoa(l.ef)
		if l.ef == h.serviceEF {
			ef += " (service)"
		}
		verdict := verdictOf(l.recall >= recallGoal)
		if l.recall >= recallGoal && reach == 0 {
			reach = l.ef
		}
		rows = append(rows, []string{ef, fmt.Sprintf("%.3f", l.recall), fmt.Sprintf("%.1f", l.worst), fmt.Sprintf("≥ %.2f", recallGoal), verdict,
			duration(l.p50) + " / " + duration(l.p99), duration(h.exactP50) + " / " + duration(h.exactP99)})
	}
	table(b, rows)
	b.WriteString("\n")
	fmt.Fprintf(b, "- data: %s.%s, %s vectors with standard normal coordinates, normalised (seed %d, %s); queries drawn alike from another stream\n",
		hnswDatabase, hnswTable, thousands(h.s.rows), h.s.seed, hnswGenerator)
	fmt.Fprintf(b, "- index as the service's on chunks.embedding: an untyped `vector` column and the expression index "+
		"`USING hnsw ((embedding::vector(%d)) vector_cosine_ops)`, pgvector's defaults m 16, ef_construction 64\n", hnswDims)
	when := "built in this run"
	if !h.built {
		when = "reused, built " + h.builtAt.UTC().Format("2006-01-02 15:04 UTC")
	}
	fmt.Fprintf(b, "- %s: COPY %s, CREATE INDEX %s (maintenance_work_mem %s, max_parallel_maintenance_workers %s)\n",
		when, h.loadTime.Round(100*time.Millisecond), h.buildTime.Round(100*time.Millisecond), hnswBuildMemory, h.workers)
	for _, n := range h.notices {
		fmt.Fprintf(b, "  - notice: %s\n", n)
	}
	fmt.Fprintf(b, "- both sides run `%s`, the ordering of search_site's vector half: the index side at hnsw.ef_search N (%s), "+
		"the exact side in a transaction with SET LOCAL enable_indexscan = off (%s)\n", hnswQuery, h.plans[0], h.plans[1])
	fmt.Fprintf(b, "- the service sets no hnsw.ef_search (postgres.Open's AfterConnect only registers types): it runs at %d, "+
		"read back from a connection opened the same way; ", h.serviceEF)
	if reach > 0 {
		fmt.Fprintf(b, "the smallest ef_search measured that reaches %.2f is %d\n", recallGoal, reach)
	} else {
		fmt.Fprintf(b, "no ef_search measured reaches %.2f\n", recallGoal)
	}
	b.WriteString("- uniformly random directions are a hard case for an approximate index: no clusters, and the nearest " +
		"neighbours are barely nearer than any other point; embeddings of real text are more structured, which this does not measure\n")
}

func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + " " + s[i:]
	}
	return s
}
