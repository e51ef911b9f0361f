package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgvector/pgvector-go"
)

// Filtered queries: search_site's vector half with a language or a path prefix, measured on
// the site-shaped dataset. With a filter, an HNSW index scan first finds hnsw.ef_search
// candidates and the filter then drops those that do not match, so that fewer than the
// 40 the service asks for may come back; pgvector 0.8's iterative scan
// (hnsw.iterative_scan) goes on searching the graph until enough match, or until
// hnsw.max_scan_tuples tuples were visited.

// hnswFilter is one filter, as search_site's parameters $4 (language) and $5 (path
// prefix) would carry it for a query.
type hnswFilter struct {
	name  string
	about string
	args  func(q siteQuery) (lang, prefix string)
}

func hnswFilters() []hnswFilter {
	return []hnswFilter{
		{name: "lang", about: "one language (en), 1 page in 2",
			args: func(siteQuery) (string, string) { return "en", "" }},
		{name: "own area", about: "the path prefix of the query's own area, 1 page in 20",
			args: func(q siteQuery) (string, string) { return "", siteAreaPath(q.area) }},
		{name: "other area", about: "the path prefix of another area than the query's, 1 page in 20",
			args: func(q siteQuery) (string, string) { return "", siteAreaPath((q.area + 1) % siteAreas) }},
	}
}

// hnswFilteredMaxEF is the largest ef_search the filtered queries are measured at.
const hnswFilteredMaxEF = 400

// hnswIterativeScans are the values of hnsw.iterative_scan measured with each filter.
var hnswIterativeScans = []string{"off", "relaxed_order"}

// filteredSQL is the vec CTE of postgres.SearchSQL on one table: the same filters, the
// same ordering and candidate count, and the candidates ordered by distance again (as
// the CTE's row_number() does, which relaxed_order needs).
func (d hnswDataset) filteredSQL() string {
	return fmt.Sprintf(`SELECT id FROM (
		SELECT id, embedding::vector(%[1]d) <=> $1::vector(%[1]d) AS dist FROM %[2]s
		WHERE ($2 = '' OR lang = $2) AND path LIKE $3 || '%%'
		ORDER BY embedding::vector(%[1]d) <=> $1::vector(%[1]d) LIMIT %[3]d) s
	ORDER BY dist, id`, hnswDims, d.table, hnswCandidates)
}

// hnswCandidates is how many chunks search_site's vector half asks for (postgres'
// candidates; bench/scale_search_report.go checks SearchSQL against its own copy).
const hnswCandidates = 40

// hnswFiltered is one filter's measurement: the plan's node and, per iterative scan, the
// levels.
type hnswFiltered struct {
	f                  hnswFilter
	maxScanTuples      string // hnsw.max_scan_tuples, pgvector's default
	plan               string
	exactP50, exactP99 time.Duration
	scans              []string
	levels             [][]hnswLevel // by scans, then ef_search
}

// measureFiltered measures every filter at every ef_search, with each iterative scan.
func measureFiltered(ctx context.Context, c *pgxpool.Conn, d hnswDataset, s hnswSettings, efs []int, progress io.Writer) ([]*hnswFiltered, error) {
	next := siteQueriesOf(s.seed)
	queries := make([]siteQuery, s.queries)
	for i := range queries {
		queries[i] = next()
	}
	// A narrow filter with an iterative scan visits up to hnsw.max_scan_tuples tuples at any
	// ef_search; larger ones than hnswFilteredMaxEF would only lengthen the run.
	efs = slices.DeleteFunc(slices.Clone(efs), func(ef int) bool { return ef > hnswFilteredMaxEF })
	var out []*hnswFiltered
	for _, f := range hnswFilters() {
		res := &hnswFiltered{f: f, scans: hnswIterativeScans}
		args := func(i int) []any {
			lang, prefix := f.args(queries[i])
			return []any{pgx.QueryExecModeExec, pgvector.NewVector(queries[i].vec), lang, prefix}
		}
		if err := c.QueryRow(ctx, `SELECT current_setting('hnsw.max_scan_tuples')`).Scan(&res.maxScanTuples); err != nil {
			return nil, err
		}
		var err error
		if res.plan, err = filteredPlan(ctx, c, d, args(0)); err != nil {
			return nil, err
		}
		exact, err := filteredExact(ctx, c, d, len(queries), args, res)
		if err != nil {
			return nil, err
		}
		for _, scan := range res.scans {
			if _, err := c.Exec(ctx, `SET hnsw.iterative_scan = `+scan); err != nil {
				return nil, err
			}
			var levels []hnswLevel
			for _, ef := range efs {
				l, err := filteredLevel(ctx, c, d, ef, exact, args)
				if err != nil {
					return nil, err
				}
				levels = append(levels, l)
				fmt.Fprintf(progress, "%s, %s, %s, iterative scan %s, ef_search %d: recall %.3f, %.1f of %d returned, p50 %s\n",
					hnswName, d.key, f.name, scan, ef, l.recall, l.returned, hnswCandidates, duration(l.p50))
			}
			res.levels = append(res.levels, levels)
		}
		out = append(out, res)
	}
	return out, nil
}

// filteredExact is each query's exact top hnswK under the filter, by a sequential scan.
func filteredExact(ctx context.Context, c *pgxpool.Conn, d hnswDataset, n int, args func(int) []any, res *hnswFiltered) ([][]int64, error) {
	exact := make([][]int64, n)
	lat := make([]time.Duration, n)
	for i := range exact {
		begin := time.Now()
		err := pgx.BeginFunc(ctx, c.Conn(), func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL enable_indexscan = off`); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, d.filteredSQL(), args(i)...)
			if err != nil {
				return err
			}
			ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			exact[i] = ids[:min(len(ids), hnswK)]
			return err
		})
		lat[i] = time.Since(begin)
		if err != nil {
			return nil, fmt.Errorf("exact filtered search: %w", err)
		}
	}
	slices.Sort(lat)
	res.exactP50, res.exactP99 = percentile(lat, 50), percentile(lat, 99)
	return exact, nil
}

// filteredLevel is recall, latency and how many candidates came back at one ef_search.
func filteredLevel(ctx context.Context, c *pgxpool.Conn, d hnswDataset, ef int, exact [][]int64, args func(int) []any) (hnswLevel, error) {
	if _, err := c.Exec(ctx, fmt.Sprintf(`SET hnsw.ef_search = %d`, ef)); err != nil {
		return hnswLevel{}, err
	}
	var returned, short int
	l, err := level(ef, hnswK, exact, func(i int) ([]int64, time.Duration, error) {
		begin := time.Now()
		rows, err := c.Query(ctx, d.filteredSQL(), args(i)...)
		if err != nil {
			return nil, 0, err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		took := time.Since(begin)
		if err != nil {
			return nil, 0, fmt.Errorf("filtered index search: %w", err)
		}
		returned += len(ids)
		if len(ids) < hnswK {
			short++
		}
		return ids[:min(len(ids), hnswK)], took, nil
	})
	l.returned, l.short = float64(returned)/float64(len(exact)), short
	return l, err
}

// filteredPlan is the node that answers the filtered query for the first query's
// arguments, planned for them as the service's statement is.
func filteredPlan(ctx context.Context, c *pgxpool.Conn, d hnswDataset, args []any) (string, error) {
	rows, err := c.Query(ctx, `EXPLAIN `+d.filteredSQL(), args...)
	if err != nil {
		return "", err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", err
	}
	plan := strings.Join(lines, "\n")
	for _, node := range []string{"Index Scan", "Seq Scan", "Bitmap Heap Scan"} {
		if strings.Contains(plan, node) {
			return planNode(plan, node), nil
		}
	}
	return strings.TrimSpace(lines[0]), nil
}
