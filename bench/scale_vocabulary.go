package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// The vocabulary section (runUpkeep): on the index of the search section (100 000
// chunks), one page written as a partial sync writes it (a publish hook's: PutPage keeping
// the vocabulary of typo correction by the page's words), against rebuilding the
// vocabulary from every chunk (RebuildVocabulary, what a partial sync did before and a
// full sync still does), and against the same write without the upkeep (a full sync's).

const (
	upkeepName   = "Search vocabulary at scale"
	upkeepRounds = 3  // interleaved: writes without upkeep, writes with, a rebuild
	upkeepWrites = 20 // page writes per round and side, alternating two versions
	upkeepWarmup = 4  // per side, before the rounds, not measured
	upkeepGoal   = 100 * time.Millisecond
)

// upkeepBench is the section's page, its two versions, and what was measured.
type upkeepBench struct {
	env        sectionEnv
	db         *postgres.DB // one connection: its backend's CPU time is read
	idx        *postgres.SiteIndex
	model      sitesearch.IndexModel
	backend    int                      // the connection's backend process
	page       [2]sitesearch.PageRecord // the page as stored, and with another page's text
	chunks     [2][]sitesearch.ChunkRecord
	words      int // words whose count a change of version moves
	vocabulary int // words in the vocabulary
	kept       upkeepSide
	plain      upkeepSide
	rebuild    upkeepSide
	agreed     int // rounds after which the vocabulary kept page by page was the rebuild's
}

// upkeepSide is one side's times, and its backend's CPU time in all.
type upkeepSide struct {
	took []time.Duration
	cpu  time.Duration
}

func runUpkeep(ctx context.Context, env sectionEnv) (_ sectionResult, err error) {
	defer func() { scaleFinished(env, upkeepName, err != nil) }()
	search := &scaleSearch{env: env}
	if search.local, err = llm.NewLocal(hnswDims); err != nil {
		return sectionResult{}, err
	}
	if err := search.ensureIndex(ctx); err != nil {
		return sectionResult{}, err
	}
	v := &upkeepBench{env: env}
	if v.db, err = postgres.Open(ctx, search.dbURL, 1); err != nil {
		return sectionResult{}, err
	}
	defer v.db.Close()
	v.idx = postgres.NewSiteIndex(v.db, hnswDims)
	if err := v.load(ctx); err != nil {
		return sectionResult{}, err
	}
	// Whatever happens, the page is left as it was stored, and its words with it.
	defer func() {
		if rerr := v.idx.PutPage(context.WithoutCancel(ctx), v.model, v.page[0], v.chunks[0], true); rerr != nil && err == nil {
			err = rerr
		}
	}()
	if err := v.measure(ctx); err != nil {
		return sectionResult{}, err
	}
	return upkeepReport(v, search.meta), nil
}

// load reads the model, the page (the first by URL) and the text of another page of
// another area (the middle one), which becomes the page's second version.
func (v *upkeepBench) load(ctx context.Context) error {
	err := v.db.Pool.QueryRow(ctx, `SELECT model, dimensions, query_prefix, document_prefix, pg_backend_pid() FROM index_meta`).
		Scan(&v.model.Name, &v.model.Dimensions, &v.model.QueryPrefix, &v.model.DocumentPrefix, &v.backend)
	if err != nil {
		return fmt.Errorf("the scale index's model: %w", err)
	}
	// The backend's CPU time is read only where it is a process of this machine.
	if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", v.backend)); err != nil || strings.TrimSpace(string(comm)) != "postgres" {
		v.backend = 0
	}
	var urls [2]string
	if err := v.db.Pool.QueryRow(ctx, `SELECT (SELECT url FROM pages ORDER BY url LIMIT 1),
		(SELECT url FROM pages ORDER BY url OFFSET (SELECT count(*) / 2 FROM pages) LIMIT 1)`).Scan(&urls[0], &urls[1]); err != nil {
		return err
	}
	for i, u := range urls {
		if v.page[i], v.chunks[i], err = v.readPage(ctx, u); err != nil {
			return err
		}
	}
	v.page[1].URL, v.page[1].Path, v.page[1].Source = v.page[0].URL, v.page[0].Path, v.page[0].Source
	return v.db.Pool.QueryRow(ctx, `WITH w AS (
		SELECT w.lexeme, sum(x.sign) AS n
		FROM (SELECT -1, * FROM unnest($1::text[], $2::text[]) UNION ALL SELECT 1, * FROM unnest($3::text[], $4::text[])) AS x(sign, context, body)
		CROSS JOIN LATERAL unnest(to_tsvector('sitetools_simple', x.context || ' ' || x.body)) w
		WHERE w.lexeme ~ '^[[:alpha:]]{3,40}$' GROUP BY w.lexeme HAVING sum(x.sign) <> 0)
		SELECT (SELECT count(*) FROM w), (SELECT count(*) FROM search_vocabulary)`,
		texts(v.chunks[0], true), texts(v.chunks[0], false), texts(v.chunks[1], true), texts(v.chunks[1], false)).Scan(&v.words, &v.vocabulary)
}

// texts are the chunks' context lines, or their bodies.
func texts(chunks []sitesearch.ChunkRecord, context bool) []string {
	out := make([]string, len(chunks))
	for i, c := range chunks {
		out[i] = c.Text
		if context {
			out[i] = c.Context
		}
	}
	return out
}

// readPage reads a page and its chunks as PutPage takes them.
func (v *upkeepBench) readPage(ctx context.Context, url string) (sitesearch.PageRecord, []sitesearch.ChunkRecord, error) {
	p := sitesearch.PageRecord{URL: url}
	err := v.db.Pool.QueryRow(ctx, `SELECT path, title, lang, body, content_hash, source FROM pages WHERE url = $1`, url).
		Scan(&p.Path, &p.Title, &p.Lang, &p.Body, &p.Hash, &p.Source)
	if err != nil {
		return p, nil, err
	}
	rows, err := v.db.Pool.Query(ctx, `SELECT c.ord, c.heading, c.anchor, c.body, c.content_hash, c.ts_config::text, c.context, c.embedding
		FROM chunks c JOIN pages p ON p.id = c.page_id WHERE p.url = $1 ORDER BY c.ord`, url)
	if err != nil {
		return p, nil, err
	}
	chunks, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (sitesearch.ChunkRecord, error) {
		var c sitesearch.ChunkRecord
		var vec pgvector.Vector
		err := r.Scan(&c.Ord, &c.Heading, &c.Anchor, &c.Text, &c.Hash, &c.TSConfig, &c.Context, &vec)
		c.Vector = vec.Slice()
		return c, err
	})
	if err == nil && len(chunks) == 0 {
		err = fmt.Errorf("%s: no chunks", url)
	}
	return p, chunks, err
}

// measure runs the rounds: the page written in its two versions in turn, without the
// upkeep, then with it, each time back to the version stored, then the rebuild. After each
// round the vocabulary kept page by page is compared with the rebuild's.
func (v *upkeepBench) measure(ctx context.Context) error {
	fmt.Fprintf(v.env.stderr, "%s: %d rounds of %d page writes per side and a rebuild\n", upkeepName, upkeepRounds, upkeepWrites)
	for _, keep := range []bool{false, true} {
		if err := v.writes(ctx, keep, upkeepWarmup, nil); err != nil {
			return err
		}
	}
	for range upkeepRounds {
		if err := v.writes(ctx, false, upkeepWrites, &v.plain); err != nil {
			return err
		}
		if err := v.writes(ctx, true, upkeepWrites, &v.kept); err != nil {
			return err
		}
		if _, err := v.db.Pool.Exec(ctx, `DROP TABLE IF EXISTS kept; CREATE TEMP TABLE kept AS SELECT * FROM search_vocabulary`); err != nil {
			return err
		}
		if err := v.timed(ctx, &v.rebuild, func() error { return v.idx.RebuildVocabulary(ctx) }); err != nil {
			return err
		}
		var differ int
		if err := v.db.Pool.QueryRow(ctx, `SELECT count(*) FROM ((TABLE kept EXCEPT TABLE search_vocabulary)
			UNION ALL (TABLE search_vocabulary EXCEPT TABLE kept)) d`).Scan(&differ); err != nil {
			return err
		}
		if differ == 0 {
			v.agreed++
		}
	}
	var backend int
	if err := v.db.Pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil || backend != v.backend {
		v.backend = 0 // another connection: its CPU time is not known
		return err
	}
	return nil
}

// writes writes the page n times (n even), the other version first, into side unless nil.
func (v *upkeepBench) writes(ctx context.Context, keep bool, n int, side *upkeepSide) error {
	for i := range n {
		version := 1 - i%2
		write := func() error { return v.idx.PutPage(ctx, v.model, v.page[version], v.chunks[version], keep) }
		if side == nil {
			if err := write(); err != nil {
				return err
			}
			continue
		}
		if err := v.timed(ctx, side, write); err != nil {
			return err
		}
	}
	return nil
}

// timed runs f once into side: its time, and the backend's CPU time it took.
func (v *upkeepBench) timed(ctx context.Context, side *upkeepSide, f func() error) error {
	cpu0, ok0 := pidCPU(v.backend)
	begin := time.Now()
	if err := f(); err != nil {
		return err
	}
	side.took = append(side.took, time.Since(begin))
	if cpu1, ok1 := pidCPU(v.backend); ok0 && ok1 {
		side.cpu += cpu1 - cpu0
	}
	return ctx.Err()
}
