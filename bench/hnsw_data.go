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

// ensureVectors reuses the dataset's table when its meta row says it holds the rows this
// generator, seed and size make and the index is valid; otherwise it loads and indexes
// them anew.
func ensureVectors(ctx context.Context, db *postgres.DB, dbURL string, d hnswDataset, s hnswSettings, res *hnswResult, progress io.Writer) error {
	pool := db.Pool
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS bench_meta (
		name text PRIMARY KEY, seed text NOT NULL, rows integer NOT NULL, dims integer NOT NULL, generator text NOT NULL,
		load_ms bigint NOT NULL, build_ms bigint NOT NULL, workers text NOT NULL, built_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return err
	}
	if reused, err := reuseVectors(ctx, db, d, s, res, progress); err != nil || reused {
		return err
	}
	res.built = true
	fmt.Fprintf(progress, "%s, %s: loading %d %d-d vectors (seed %d)\n", hnswName, d.key, s.rows, hnswDims, s.seed)
	if err := loadVectors(ctx, db, d, s, res); err != nil {
		return err
	}
	if err := buildIndex(ctx, dbURL, d, res, progress); err != nil {
		return err
	}
	_, err := pool.Exec(ctx, `INSERT INTO bench_meta (name, seed, rows, dims, generator, load_ms, build_ms, workers, built_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, d.table, strconv.FormatUint(s.seed, 10), s.rows, hnswDims, d.generator,
		res.loadTime.Milliseconds(), res.buildTime.Milliseconds(), res.workers, res.builtAt)
	return err
}

// reuseVectors reports whether the table already holds the dataset, with a valid index.
func reuseVectors(ctx context.Context, db *postgres.DB, d hnswDataset, s hnswSettings, res *hnswResult, progress io.Writer) (bool, error) {
	pool := db.Pool
	seed := strconv.FormatUint(s.seed, 10)
	var loadMS, buildMS int64
	err := pool.QueryRow(ctx, `SELECT m.load_ms, m.build_ms, m.workers, m.built_at FROM bench_meta m
		WHERE m.name = $1 AND m.seed = $2 AND m.rows = $3 AND m.dims = $4 AND m.generator = $5
		  AND EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = $6 AND i.indisvalid)`,
		d.table, seed, s.rows, hnswDims, d.generator, d.index).Scan(&loadMS, &buildMS, &res.workers, &res.builtAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	// The meta row could outlive a table changed by hand: count, and compare the first row.
	var n int
	var first pgvector.Vector
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+d.table).Scan(&n); err != nil {
		return false, err
	}
	if err := pool.QueryRow(ctx, `SELECT embedding FROM `+d.table+` WHERE id = 1`).Scan(&first); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return false, err
	}
	want := d.rows(s.seed)(make([]float32, hnswDims))
	if n != s.rows || !slices.Equal(first.Slice(), want) {
		return false, nil
	}
	res.loadTime, res.buildTime = time.Duration(loadMS)*time.Millisecond, time.Duration(buildMS)*time.Millisecond
	fmt.Fprintf(progress, "%s, %s: reusing %s (%d rows, seed %s, built %s)\n", hnswName, d.key, d.table, n, seed, res.builtAt.UTC().Format(time.DateTime))
	return true, nil
}

// loadVectors recreates the table and copies the dataset's rows into it.
func loadVectors(ctx context.Context, db *postgres.DB, d hnswDataset, s hnswSettings, res *hnswResult) error {
	pool := db.Pool
	for _, stmt := range []string{
		`DELETE FROM bench_meta WHERE name = '` + d.table + `'`,
		`DROP TABLE IF EXISTS ` + d.table,
		// Untyped, as chunks.embedding: the dimension is in the index's cast.
		`CREATE TABLE ` + d.table + ` (id integer PRIMARY KEY, embedding vector NOT NULL` + metaColumns(d) + `)`,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			return err
		}
	}
	begin := time.Now()
	next := d.rows(s.seed)
	buf := make([]float32, hnswDims)
	i := 0
	columns := []string{"id", "embedding"}
	if d.meta != nil {
		columns = append(columns, "lang", "path")
	}
	n, err := pool.CopyFrom(ctx, pgx.Identifier{d.table}, columns, pgx.CopyFromFunc(func() ([]any, error) {
		if i == s.rows {
			return nil, nil
		}
		i++
		row := []any{i, pgvector.NewVector(next(buf))}
		if d.meta != nil {
			lang, path := d.meta(i)
			row = append(row, lang, path)
		}
		return row, nil
	}))
	if err != nil {
		return fmt.Errorf("COPY: %w", err)
	}
	if int(n) != s.rows {
		return fmt.Errorf("COPY: %d rows, want %d", n, s.rows)
	}
	res.loadTime = time.Since(begin)
	return nil
}

// metaColumns are the columns a dataset with meta has besides id and embedding, as pages
// has them for search_site's filters.
func metaColumns(d hnswDataset) string {
	if d.meta == nil {
		return ""
	}
	return `, lang text NOT NULL, path text NOT NULL`
}

// buildIndex builds the HNSW index as the service builds chunks', on a connection of its
// own, to collect the build's notices (such as the graph not fitting in memory).
func buildIndex(ctx context.Context, dbURL string, d hnswDataset, res *hnswResult, progress io.Writer) error {
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
	fmt.Fprintf(progress, "%s, %s: building %s (loaded in %s)\n", hnswName, d.key, d.index, res.loadTime.Round(time.Millisecond))
	begin := time.Now()
	// The statement postgres.SiteIndex.Prepare runs for chunks, on this table.
	if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE INDEX %s ON %s USING hnsw ((embedding::vector(%d)) vector_cosine_ops)`,
		d.index, d.table, hnswDims)); err != nil {
		return fmt.Errorf("CREATE INDEX: %w", err)
	}
	res.buildTime = time.Since(begin)
	if _, err := conn.Exec(ctx, `ANALYZE `+d.table); err != nil {
		return err
	}
	res.builtAt = time.Now()
	return nil
}

// serviceVectorSearch is hnsw.ef_search and hnsw.iterative_scan on a fresh pool
// connection opened as the service opens its own: postgres.Open's AfterConnect sets them
// on every connection.
func serviceVectorSearch(ctx context.Context, db *postgres.DB) (ef int, scan string, err error) {
	c, err := db.Pool.Acquire(ctx)
	if err != nil {
		return 0, "", err
	}
	defer c.Release()
	var v string
	// The settings exist once pgvector's library is loaded in the session.
	if err := c.QueryRow(ctx, `SELECT ('[1,0]'::vector <=> '[0,1]'::vector)::text, current_setting('hnsw.ef_search'),
		current_setting('hnsw.iterative_scan')`).Scan(new(string), &v, &scan); err != nil {
		return 0, "", err
	}
	ef, err = strconv.Atoi(v)
	return ef, scan, err
}

// checkPlans makes sure the index side uses the HNSW index and the exact side does not,
// and returns the top node of each plan.
func checkPlans(ctx context.Context, conn *pgx.Conn, d hnswDataset, q pgvector.Vector) ([2]string, error) {
	var out [2]string
	plan := func(tx pgx.Tx) (string, error) {
		rows, err := tx.Query(ctx, `EXPLAIN `+d.query(), q)
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
		if !strings.Contains(p, "Index Scan using "+d.index) {
			return fmt.Errorf("the kNN query does not use %s:\n%s", d.index, p)
		}
		out[0] = planNode(p, "Index Scan")
		if _, err := tx.Exec(ctx, `SET LOCAL enable_indexscan = off`); err != nil {
			return err
		}
		if p, err = plan(tx); err != nil {
			return err
		}
		if strings.Contains(p, d.index) {
			return fmt.Errorf("the exact query still uses %s:\n%s", d.index, p)
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
}, d hnswDataset, v pgvector.Vector) ([]int64, error) {
	rows, err := q.Query(ctx, d.query(), v)
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
