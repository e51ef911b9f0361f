package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgvector/pgvector-go"

	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/postgres"
)

// scaleRecall is the recall of the served query's vector half against exact search, at
// the service's hnsw.ef_search and at larger ones.
type scaleRecall struct {
	ef, candidates int
	queries        int
	levels         []hnswLevel
	exactTook      time.Duration // reading every vector and ranking them for every question
	plan           string        // the node the vector half is answered by
}

// service is the level at the service's own hnsw.ef_search.
func (r *scaleRecall) service() hnswLevel {
	for _, l := range r.levels {
		if l.ef == r.ef {
			return l
		}
	}
	return hnswLevel{}
}

// scaleEFs are the hnsw.ef_search values recall is measured at besides the service's.
var scaleEFs = []int{200, 400, 1000}

// legRE finds the vector half's ordering and candidate count in postgres.SearchSQL.
var legRE = regexp.MustCompile(fmt.Sprintf(`ORDER BY c\.embedding::vector\(%[1]d\) <=> \$2::vector\(%[1]d\)\s+LIMIT (\d+)`, hnswDims))

// legSQL is the vector half of postgres.SearchSQL as a statement of its own, as
// search_site runs it without a language or a path prefix: the same conditions, ordering
// and candidate count.
func legSQL(candidates int) string {
	return fmt.Sprintf(`SELECT c.id FROM chunks c WHERE $2 = '' AND $3 = ''
		ORDER BY c.embedding::vector(%[1]d) <=> $1::vector(%[1]d) LIMIT %d`, hnswDims, candidates)
}

// recall compares the top k of the vector half with the exact top k, at the service's
// hnsw.ef_search and at larger ones, on a connection of the baseline's pool (opened as
// the service's).
func (s *scaleSearch) recall(ctx context.Context, vecs []pgvector.Vector) (*scaleRecall, error) {
	m := legRE.FindStringSubmatch(postgres.SearchSQL(hnswDims, false))
	if m == nil {
		return nil, errors.New("the vector half of postgres.SearchSQL is not the one legSQL mirrors: update legSQL")
	}
	res := &scaleRecall{queries: len(vecs)}
	res.candidates, _ = strconv.Atoi(m[1])
	c, err := s.base.Pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Release()
	if err := c.QueryRow(ctx, `SELECT current_setting('hnsw.ef_search')::int`).Scan(&res.ef); err != nil {
		return nil, err
	}
	if res.plan, err = legPlan(ctx, c, res.candidates, vecs[0]); err != nil {
		return nil, err
	}
	fmt.Fprintf(s.env.stderr, "%s: exact top %d of %d questions (every chunk's vector, read once)\n", scaleSearchName, scaleKNN, len(vecs))
	begin := time.Now()
	exact, err := exactTopK(ctx, c, vecs, scaleKNN)
	if err != nil {
		return nil, err
	}
	res.exactTook = time.Since(begin)
	efs := append([]int{res.ef}, scaleEFs...)
	slices.Sort(efs)
	for _, ef := range slices.Compact(efs) {
		l, err := legLevel(ctx, c, res.candidates, vecs, exact, ef)
		if err != nil {
			return nil, err
		}
		res.levels = append(res.levels, l)
	}
	// Back to the service's value before the connection returns to the pool.
	_, err = c.Exec(ctx, fmt.Sprintf(`SET hnsw.ef_search = %d`, res.ef))
	return res, err
}

// legLevel is the recall and latency of the vector half at one hnsw.ef_search.
func legLevel(ctx context.Context, c *pgxpool.Conn, candidates int, vecs []pgvector.Vector, exact [][]int64, ef int) (hnswLevel, error) {
	if _, err := c.Exec(ctx, fmt.Sprintf(`SET hnsw.ef_search = %d`, ef)); err != nil {
		return hnswLevel{}, err
	}
	return level(ef, scaleKNN, exact, func(i int) ([]int64, time.Duration, error) {
		return legTop(ctx, c, candidates, vecs[i])
	})
}

// legTop runs the vector half, planned for its arguments (the same walk of the HNSW
// index as the service's generic plan, which legPlan checks), and returns its first k ids.
func legTop(ctx context.Context, c *pgxpool.Conn, candidates int, v pgvector.Vector) ([]int64, time.Duration, error) {
	begin := time.Now()
	rows, err := c.Query(ctx, legSQL(candidates), pgx.QueryExecModeExec, v, "", "")
	if err != nil {
		return nil, 0, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	d := time.Since(begin)
	return ids[:min(len(ids), scaleKNN)], d, err
}

// legPlan checks that the vector half uses the HNSW index, and returns the plan's node.
func legPlan(ctx context.Context, c *pgxpool.Conn, candidates int, v pgvector.Vector) (string, error) {
	rows, err := c.Query(ctx, `EXPLAIN `+legSQL(candidates), pgx.QueryExecModeExec, v, "", "")
	if err != nil {
		return "", err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", err
	}
	plan, index := strings.Join(lines, "\n"), fmt.Sprintf("chunks_embedding_hnsw_%d", hnswDims)
	if !strings.Contains(plan, "Index Scan using "+index) {
		return "", fmt.Errorf("the vector half does not use %s:\n%s", index, plan)
	}
	return planNode(plan, "Index Scan"), nil
}

// exactTopK reads every chunk's vector once and returns, for each query, the ids of the
// k chunks nearest to it by cosine distance, computed in float64 (pgvector's <=>):
// one pass over the table rather than a sequential scan per question.
func exactTopK(ctx context.Context, c *pgxpool.Conn, queries []pgvector.Vector, k int) ([][]int64, error) {
	type hit struct {
		id   int64
		dist float64
	}
	qs := make([][]float64, len(queries))
	for i, q := range queries {
		qs[i] = unit(q.Slice())
	}
	top := make([][]hit, len(queries))
	rows, err := c.Query(ctx, `SELECT id, embedding FROM chunks`)
	if err != nil {
		return nil, err
	}
	var id int64
	var v pgvector.Vector
	_, err = pgx.ForEachRow(rows, []any{&id, &v}, func() error {
		e := unit(v.Slice())
		for i, q := range qs {
			var dot float64
			for j, x := range q {
				dot += x * e[j]
			}
			h := hit{id, 1 - dot}
			t := top[i]
			if len(t) == k && h.dist >= t[k-1].dist {
				continue
			}
			at, _ := slices.BinarySearchFunc(t, h.dist, func(a hit, d float64) int { return cmp.Compare(a.dist, d) })
			t = slices.Insert(t, at, h)
			top[i] = t[:min(len(t), k)]
		}
		return nil
	})
	out := make([][]int64, len(top))
	for i, t := range top {
		for _, h := range t {
			out[i] = append(out[i], h.id)
		}
	}
	return out, err
}

// unit is v in float64, scaled to length 1 (a zero vector stays zero).
func unit(v []float32) []float64 {
	out := make([]float64, len(v))
	var sum float64
	for i, x := range v {
		out[i] = float64(x)
		sum += out[i] * out[i]
	}
	if sum > 0 {
		inv := 1 / math.Sqrt(sum)
		for i := range out {
			out[i] *= inv
		}
	}
	return out
}

// explain is EXPLAIN (ANALYZE, BUFFERS) of postgres.SearchSQL, planned as the service
// plans it (the statement of a search without a language or a path prefix, on its
// generic plan), with the arguments search_site passes for q: its text and vector, the
// default limit, no language, no path prefix, and empty values for the parameters after
// those (no synonyms, no corrections, both stemmings). The query's vector, 384 numbers,
// is shortened in the plan.
func (s *scaleSearch) explain(ctx context.Context, q scaleQuery, vec pgvector.Vector) (string, error) {
	c, err := s.base.Pool.Acquire(ctx)
	if err != nil {
		return "", err
	}
	defer c.Release()
	const name = "scale_search_explain"
	sd, err := c.Conn().Prepare(ctx, name, postgres.SearchSQL(hnswDims, false))
	if err != nil {
		return "", err
	}
	defer c.Conn().Deallocate(context.WithoutCancel(ctx), name) //nolint:errcheck // the connection's, closed with the pool
	// EXECUTE's arguments as literals: PostgreSQL cannot describe a parameter of EXPLAIN.
	args := []string{sqlLiteral(q.text), sqlLiteral(vec.String()), "5", "''", "''"}
	for _, oid := range sd.ParamOIDs[min(len(args), len(sd.ParamOIDs)):] {
		switch oid {
		case pgtype.TextArrayOID:
			args = append(args, "'{}'")
		case pgtype.Int8OID: // the generation: 0, any
			args = append(args, "0")
		default:
			args = append(args, "''")
		}
	}
	var lines []string
	for range 2 { // the second, as the connection's earlier searches leave it
		b := &pgx.Batch{}
		b.Queue(postgres.GenericPlanSQL)
		b.Queue(fmt.Sprintf(`EXPLAIN (ANALYZE, BUFFERS) EXECUTE %s(%s)`, name, strings.Join(args[:len(sd.ParamOIDs)], ", "))).
			Query(func(rows pgx.Rows) error {
				lines, err = pgx.CollectRows(rows, pgx.RowTo[string])
				return err
			})
		if err := c.SendBatch(ctx, b).Close(); err != nil {
			return "", err
		}
	}
	plan, index := strings.Join(lines, "\n"), fmt.Sprintf("chunks_embedding_hnsw_%d", hnswDims)
	if !strings.Contains(plan, "Index Scan using "+index) {
		return "", fmt.Errorf("the served statement's generic plan does not walk %s:\n%s", index, plan)
	}
	return vectorLiteral.ReplaceAllString(plan, "'[…]'::vector("), nil
}

// sqlLiteral quotes s as an SQL string constant.
func sqlLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// vectorLiteral is a vector constant in a plan.
var vectorLiteral = regexp.MustCompile(`'\[[-0-9.,e]+\]'::vector\(`)

// scaleSearchReport is the search section's markdown and its missed goals.
func scaleSearchReport(s *scaleSearch, lat *scaleLatencies, rec *scaleRecall, planned, plan string) sectionResult {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", scaleSearchName)
	fmt.Fprintf(&b, "A generated site of %s pages (%s): %d areas of %d topics each; every topic has %d words of its own, every "+
		"area %d its topics share, and all pages %d common words and English function words, each list drawn from with a "+
		"Zipf distribution (s = 1.2). A page is about one topic: its title's intro and nine sections (%d–%d words each, "+
		"one chunk each) draw 40 %% of their words from the topic, 8 %% from a sibling topic, 12 %% from the area, 15 %% "+
		"common, 25 %% function words; the words are invented, made of syllables. So the full-text half has rare lexemes "+
		"to rank, and the local embedder's vectors cluster by topic and, more loosely, by area. The index holds %s pages "+
		"and %s chunks, written by %s in %s (%s).\n\n",
		thousands(scalePages), scaleGenerator, scaleAreas, scaleTopics, scaleTopicWords, scaleAreaWords, scaleCommonWords,
		scaleSectionWords, scaleSectionWords+scaleSectionSpread-1, thousands(s.meta.pages), thousands(s.meta.chunks), s.meta.how,
		seconds(s.meta.took), scaleBuilt(s))
	fmt.Fprintf(&b, "search_site runs in the service as `sitetools serve` builds it (app.Build) on that database, over HTTP on "+
		"loopback, one request at a time on a keep-alive connection: POST /api/chat/tools with a generated question "+
		"(two to four words of one topic's, sometimes one of its area's, sometimes in a phrase), timed to the answer's last "+
		"byte. Its query embedding comes (a) uncached from a fake OpenAI-compatible provider (llmtest.Server in this "+
		"process, the real wire format, no delay, embedding with the local algorithm: EMBEDDINGS_PROVIDER=openai, "+
		"EMBEDDINGS_MODEL=%s) through the cost guard (memory cache, the shared cache in PostgreSQL, the budget, the ledger), "+
		"every question new to both caches; and (b) from the memory cache, the same questions asked again. The baseline is "+
		"a pure pgvector kNN query on the same HNSW index, `%s`, with the question's vector computed beforehand, on a pool "+
		"opened as the service opens its own (postgres.Open: %d connections, hnsw.ef_search %d). %d rounds of %d questions "+
		"per side, interleaved (baseline, uncached, cached), after a warm-up round of %d.\n\n",
		llm.LocalModel, knnSQL(), s.cfg.DatabaseMaxConns, rec.ef, scaleRounds, scalePerRound, scaleWarmups)
	missed := scaleLatencyTable(&b, lat)
	missed = append(missed, scaleRecallTable(&b, rec)...)
	scaleSearchNotes(&b, lat, rec, plan)
	fmt.Fprintf(&b, "\n`EXPLAIN (ANALYZE, BUFFERS)` of the served statement (postgres.SearchSQL, planned as the service plans it: a search without a language or a path prefix, on the statement's generic plan) for the question %q, after the rounds (the second of two runs; the query vector shortened):\n\n"+
		"```\n%s\n```\n", planned, plan)
	return sectionResult{text: b.String(), missed: missed}
}

// scaleBuilt says when the index was built: by this run (here, or by the ingest
// section before), or by an earlier run that this one reused.
func scaleBuilt(s *scaleSearch) string {
	if s.reused && !scaleShared.done[scaleIngestName] {
		return "reused, built " + s.meta.builtAt.UTC().Format("2006-01-02 15:04 UTC")
	}
	return "in this run"
}

// scaleLatencyTable writes the latencies and their goal, and returns the missed ones.
func scaleLatencyTable(b *strings.Builder, lat *scaleLatencies) []string {
	for _, l := range [][]time.Duration{lat.baseline, lat.uncached, lat.cached} {
		slices.Sort(l)
	}
	base := percentile(lat.baseline, 99)
	rows := [][]string{{"measured", "p50", "p99", "p99 ÷ baseline p99", "goal", "result", "samples"}}
	var missed []string
	for _, side := range []struct {
		name string
		l    []time.Duration
	}{
		{"search_site over HTTP, (a) uncached embedding", lat.uncached},
		{"search_site over HTTP, (b) cached embedding", lat.cached},
	} {
		p99 := percentile(side.l, 99)
		ratio := float64(p99) / float64(base)
		pass := ratio <= scaleLatencyGoal
		if !pass {
			missed = append(missed, fmt.Sprintf("%s, %s: p99 %.1f× the baseline's, goal ≤ %.0f×", scaleSearchName, side.name, ratio, scaleLatencyGoal))
		}
		rows = append(rows, []string{side.name, duration(percentile(side.l, 50)), duration(p99), fmt.Sprintf("%.2f", ratio),
			fmt.Sprintf("≤ %.0f", scaleLatencyGoal), verdictBy(pass, fmt.Sprintf("%.0f %% over", 100*(ratio/scaleLatencyGoal-1))), strconv.Itoa(len(side.l))})
	}
	rows = append(rows, []string{"pgvector kNN, k " + strconv.Itoa(scaleKNN) + " (baseline)", duration(percentile(lat.baseline, 50)),
		duration(base), "1", "", "", strconv.Itoa(len(lat.baseline))})
	slices.Sort(lat.instant)
	rows = append(rows, []string{"search_site over HTTP, mode instant, per keystroke", duration(percentile(lat.instant, 50)),
		duration(percentile(lat.instant, 99)), fmt.Sprintf("%.2f", float64(percentile(lat.instant, 99))/float64(base)), "", "not judged: see below",
		strconv.Itoa(len(lat.instant))})
	table(b, rows)
	fmt.Fprintf(b, "\nThe instant mode is what <sitetools-search> asks after each keystroke: the first %d questions of each round "+
		"typed one character at a time, from the second on (full-text only, the last word completed from the index's "+
		"vocabulary, no embedding): %d provider requests for %d keystrokes, %d of which found a page (every word typed so "+
		"far must match; a stop word alone, or a letter none of the commonest words that go with the others starts with, "+
		"finds nothing). It is the server's share of the keystroke-to-"+
		"results time the browser benchmark measures through `next start`; its goal is there (p50 ≤ 50 ms, the whole path).\n",
		scaleTyped, lat.providerInstant, len(lat.instant), lat.instantFound)
	if len(missed) > 0 {
		b.WriteString("\nWhy the miss: the baseline is one kNN walk of the HNSW index; the served statement also runs the " +
			"full-text half, which gathers a bounded set of candidates from the GIN index and ranks them (`ts_rank`, then " +
			"`ts_rank_cd` for the best), fuses both, keeps each page's best chunk and builds its snippet (`ts_headline`), plus " +
			"the HTTP API and the cost guard. The plan below shows where the time goes.\n")
	}
	b.WriteString("\n")
	return missed
}

func verdictBy(pass bool, by string) string {
	if pass {
		return "PASS"
	}
	return "MISS (" + by + ")"
}

// scaleRecallTable writes the recall of the vector half and its goal, judged at the
// service's hnsw.ef_search.
func scaleRecallTable(b *strings.Builder, rec *scaleRecall) []string {
	rows := [][]string{{"hnsw.ef_search", "recall@10", "worst question", "below 0.5", "p50 / p99"}}
	reach := 0
	for _, l := range rec.levels {
		ef := strconv.Itoa(l.ef)
		if l.ef == rec.ef {
			ef += " (service)"
		}
		if l.recall >= recallGoal && reach == 0 {
			reach = l.ef
		}
		rows = append(rows, []string{ef, fmt.Sprintf("%.3f", l.recall), fmt.Sprintf("%.1f", l.worst), strconv.Itoa(l.poor),
			duration(l.p50) + " / " + duration(l.p99)})
	}
	fmt.Fprintf(b, "Recall@%d of the served query's vector half (its top %d of %d candidates) against exact search, %d questions, "+
		"informational: the local embedder's hashed word and character features are not shaped like a sentence model's "+
		"embeddings (see the note below), and the service's hnsw.ef_search is judged on vectors that are, in the HNSW "+
		"recall section's site-shaped dataset:\n\n", scaleKNN, scaleKNN, rec.candidates, rec.queries)
	table(b, rows)
	b.WriteString("\n")
	if reach > 0 {
		fmt.Fprintf(b, "The smallest hnsw.ef_search measured that reaches %.2f here is %d (SEARCH_EF_SEARCH; docs/embeddings.md "+
			"says when to raise it).\n\n", recallGoal, reach)
	} else {
		fmt.Fprintf(b, "No hnsw.ef_search measured reaches %.2f here.\n\n", recallGoal)
	}
	return nil
}

// planningRE finds the planning and execution times in EXPLAIN ANALYZE's output.
var planningRE = regexp.MustCompile(`Planning Time: ([0-9.]+) ms(?s:.*)Execution Time: ([0-9.]+) ms`)

func scaleSearchNotes(b *strings.Builder, lat *scaleLatencies, rec *scaleRecall, plan string) {
	n := len(lat.uncached)
	fmt.Fprintf(b, "- the fake provider received %d requests while the %d uncached questions were asked, %d while the cached "+
		"ones were: one per new question, none for a cached one\n", lat.providerUncached, n, lat.providerCached)
	fmt.Fprintf(b, "- the first page of %d of the %d uncached answers (%.0f %%) is of the question's topic\n",
		lat.topicHits, n, 100*float64(lat.topicHits)/float64(max(n, 1)))
	fmt.Fprintf(b, "- recall: the index side runs the vector half of postgres.SearchSQL as a statement of its own (`%s`), "+
		"planned for its arguments as the service plans its statement, on a connection of the service's pool (%s); its "+
		"top %d is compared with the exact top %d by cosine distance, for which every chunk's vector is read once and "+
		"ranked for every question in float64 (%s for all %d questions, rather than a sequential scan of the table for each)\n",
		strings.Join(strings.Fields(legSQL(rec.candidates)), " "), rec.plan, scaleKNN, scaleKNN, seconds(rec.exactTook), rec.queries)
	if l := rec.service(); l.poor > 0 {
		fmt.Fprintf(b, "- at the service's hnsw.ef_search %d of %d questions found fewer than half of their exact top %d, most of "+
			"them none: the local embedder's vector of a short question shares features with its own topic's chunks only, so "+
			"that all other chunks are about equally far from it, and the greedy descent through the graph, with nothing to go "+
			"by among them, can settle in another topic; a larger ef_search widens the search (see the table), at its cost in "+
			"latency\n", l.poor, rec.queries, scaleKNN)
	}
	if m := planningRE.FindStringSubmatch(plan); m != nil {
		legs := ""
		v, f := legRowsRE("vec").FindStringSubmatch(plan), legRowsRE("fts").FindStringSubmatch(plan)
		if v != nil && f != nil {
			legs = fmt.Sprintf(", of which the vector half %s ms and the full-text half %s ms (gathering its bounded "+
				"candidates from the GIN index and ranking them)", v[1], f[1])
		}
		fmt.Fprintf(b, "- search_site's statement is planned for its arguments on every call (an unnamed statement; a cached "+
			"generic plan would not use the HNSW index); in the plan below planning takes %s ms and execution %s ms%s\n", m[1], m[2], legs)
	}
}

// legRowsRE finds when a leg of the plan (a subquery scan on vec or fts) was done.
func legRowsRE(leg string) *regexp.Regexp {
	return regexp.MustCompile(`Subquery Scan on ` + leg + ` .*\(actual time=[0-9.]+\.\.([0-9.]+) `)
}
