package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/sitetools/sitetools/tools/sitesearch"
)

// SiteIndex is the search index of sitesearch in PostgreSQL: pages, their chunks with
// embeddings and full-text vectors, and which model produced the embeddings. It
// implements sitesearch.Index.
type SiteIndex struct {
	db   *DB
	dims int
	// statements holds SearchSQL(dims, true) and SearchSQL(dims, false) by dims: a search
	// runs the statement of its query vector's dimension, which is the live index's (see
	// Live), not necessarily the configured one.
	statements sync.Map // int → searchStatements
	live       liveCache
	// candidate is the rebuild's model when this index searches its vectors beside the
	// live ones (Candidate); nil: the live vectors.
	candidate *sitesearch.IndexModel
}

// searchStatements are the filtered and unfiltered search statements of one dimension.
type searchStatements struct{ filtered, unfiltered string }

// NewSiteIndex returns the index for embeddings of dims dimensions.
func NewSiteIndex(db *DB, dims int) *SiteIndex {
	return &SiteIndex{db: db, dims: dims}
}

// statementsFor returns the search statements for query vectors of dims dimensions.
func (s *SiteIndex) statementsFor(dims int) searchStatements {
	if st, ok := s.statements.Load(dims); ok {
		return st.(searchStatements)
	}
	column := "embedding"
	if s.candidate != nil {
		column = "embedding_next"
	}
	st := searchStatements{filtered: searchSQLOn(column, dims, true), unfiltered: searchSQLOn(column, dims, false)}
	s.statements.Store(dims, st)
	return st
}

// CheckModel returns a *sitesearch.ErrModelMismatch when the index was built by another
// model, dimension or prefixes. An empty index matches anything.
func (s *SiteIndex) CheckModel(ctx context.Context, want sitesearch.IndexModel) error {
	var have sitesearch.IndexModel
	err := s.db.Pool.QueryRow(ctx, `SELECT model, dimensions, query_prefix, document_prefix FROM index_meta`).
		Scan(&have.Name, &have.Dimensions, &have.QueryPrefix, &have.DocumentPrefix)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return Wrap("postgres.SiteIndex.CheckModel", err)
	}
	if have != want {
		return &sitesearch.ErrModelMismatch{Have: have, Want: want}
	}
	return nil
}

// Prepare makes sure the HNSW index for the dimension exists, unless the index holds no
// chunk yet: then Finish builds it once the first load is written, as pgvector advises,
// which is many times faster than growing the graph row by row. With reset, every page,
// chunk and the model record are removed first (a re-index with another model). The model
// is recorded by PutPage, with the first page of it.
func (s *SiteIndex) Prepare(ctx context.Context, dims int, reset bool) error {
	tx, err := s.db.Pool.Begin(ctx)
	if err != nil {
		return Wrap("postgres.SiteIndex.Prepare", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if reset {
		if err := dropIndex(ctx, tx); err != nil {
			return Wrap("postgres.SiteIndex.Prepare", err)
		}
	}
	var empty bool
	if err := tx.QueryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM chunks)`).Scan(&empty); err != nil {
		return Wrap("postgres.SiteIndex.Prepare", err)
	}
	if !empty {
		if err := buildVectorIndex(ctx, tx, dims); err != nil {
			return Wrap("postgres.SiteIndex.Prepare", err)
		}
	}
	return Wrap("postgres.SiteIndex.Prepare", tx.Commit(ctx))
}

// dropIndex removes every page, chunk, cached query embedding and the model record, and
// the HNSW indexes, which of another dimension would refuse the new vectors.
func dropIndex(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `TRUNCATE pages, chunks, embedding_cache`); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM index_meta`); err != nil {
		return err
	}
	return dropLiveHNSW(ctx, tx)
}

// candidates is how many chunks each ranking contributes to the fusion.
const candidates = 40

// rrfK is reciprocal rank fusion's constant.
const rrfK = 60

// allCandidates is how many chunks holding every word of a question the full-text half
// ranks at most, termCandidates how many holding one word (or synonym, or correction),
// and preRanked how many of those ts_rank_cd orders after ts_rank chose them: as many as
// the fusion takes. ts_rank_cd costs about 18µs a chunk at 100 000 chunks; ordering three
// times as many took 2.2 of the full-text half's 4.1 ms there and gave the demo's
// questions no better top 3 (docs/benchmarks.md, TestRelevanceByKind).
const (
	allCandidates  = 200
	termCandidates = 100
	preRanked      = candidates
)

// searchSQL fuses a vector kNN ranking and a full-text ranking of chunks by reciprocal
// rank fusion, keeps each page's best chunk, and builds its snippet: one round trip.
// The full-text query ORs the query's lexemes under English, German and simple parsing,
// so a question needs not contain every word of a page. Its work is bounded by the
// number of the question's words, not by the size of the site: it ranks at most
// allCandidates + (words + synonyms + corrections + 1) × termCandidates chunks.
const searchSQL = `
WITH q AS (
	SELECT fq, sq, cq, fq || sq || cq AS aq FROM (SELECT
		(SELECT coalesce(en.q, ''::tsquery) || coalesce(de.q, ''::tsquery) || coalesce(si.q, ''::tsquery)
		 FROM (SELECT string_agg(quote_literal(l), ' | ')::tsquery AS q FROM unnest(tsvector_to_array(to_tsvector('sitetools_english', $1))) l WHERE $8 <> 'de') en,
		      (SELECT string_agg(quote_literal(l), ' | ')::tsquery AS q FROM unnest(tsvector_to_array(to_tsvector('sitetools_german', $1))) l WHERE $8 <> 'en') de,
		      (SELECT string_agg(quote_literal(l), ' | ')::tsquery AS q FROM unnest(tsvector_to_array(to_tsvector('sitetools_simple', $1))) l) si) AS fq,
		-- A synonym or a correction matches as a whole: the words of a phrase together.
		(SELECT coalesce(string_agg('(' || t::text || ')', ' | ')::tsquery, ''::tsquery) FROM (
			SELECT plainto_tsquery('sitetools_english', x) || plainto_tsquery('sitetools_german', x) || plainto_tsquery('sitetools_simple', x) AS t
			FROM unnest($6::text[]) x) s WHERE numnode(t) > 0) AS sq,
		(SELECT coalesce(string_agg('(' || t::text || ')', ' | ')::tsquery, ''::tsquery) FROM (
			SELECT plainto_tsquery('sitetools_english', x) || plainto_tsquery('sitetools_german', x) || plainto_tsquery('sitetools_simple', x) AS t
			FROM unnest($7::text[]) x) s WHERE numnode(t) > 0) AS cq
	) parts
),
vec AS (
	SELECT id, dist, row_number() OVER (ORDER BY dist) AS rank FROM (
		SELECT c.id, c.%[9]s::vector(%[1]d) <=> $2::vector(%[1]d) AS dist
		FROM chunks c%[7]s
		WHERE $2::vector IS NOT NULL AND ($9::bigint = 0 OR $9::bigint = (SELECT generation FROM index_meta))%[8]s
		ORDER BY c.%[9]s::vector(%[1]d) <=> $2::vector(%[1]d)
		LIMIT %[2]d) s
),
-- The query's words that are no stop word of English or German, each with its forms: the
-- full-text half's candidates and each result's coverage.
words AS (
	SELECT t FROM (
		SELECT plainto_tsquery('sitetools_english', w) || plainto_tsquery('sitetools_german', w) || plainto_tsquery('sitetools_simple', w) AS t
		FROM unnest(tsvector_to_array(to_tsvector('simple', $1))) w
		WHERE numnode(plainto_tsquery('sitetools_english', w)) > 0 AND numnode(plainto_tsquery('sitetools_german', w)) > 0) x
	WHERE numnode(t) > 0
),
terms AS (
	SELECT t FROM words
	UNION ALL
	SELECT plainto_tsquery('sitetools_english', x) || plainto_tsquery('sitetools_german', x) || plainto_tsquery('sitetools_simple', x)
	FROM unnest($6::text[] || $7::text[]) x
),
-- What the full-text half ranks, all found through the GIN index and each part bounded:
-- chunks that hold every word, chunks that hold each word, synonym or correction, and
-- chunks that match the query in any way. A rare word's chunks are all there; a word
-- that much of a large site holds brings a sample of them, which answer it as well as
-- the others would.
cand AS (
	(SELECT c.id FROM chunks c%[7]s, (SELECT string_agg('(' || t::text || ')', ' & ')::tsquery AS t FROM words) a
	 WHERE a.t IS NOT NULL AND c.tsv @@ a.t%[8]s
	 LIMIT %[4]d)
	UNION
	SELECT x.id FROM terms CROSS JOIN LATERAL (
		SELECT c.id FROM chunks c%[7]s
		WHERE numnode(terms.t) > 0 AND c.tsv @@ terms.t%[8]s
		LIMIT %[5]d) x
	UNION
	(SELECT c.id FROM chunks c%[7]s, q
	 WHERE numnode(q.aq) > 0 AND c.tsv @@ q.aq%[8]s
	 LIMIT %[5]d)
),
-- ts_rank_cd orders the best of them by ts_rank, which costs a fraction of it.
fts AS (
	SELECT id, row_number() OVER (ORDER BY r DESC, id) AS rank FROM (
		SELECT c.id, ts_rank_cd(c.tsv, q.aq, 32) AS r
		FROM (SELECT c.id FROM cand JOIN chunks c ON c.id = cand.id, q
		      ORDER BY ts_rank(c.tsv, q.aq, 32) DESC, c.id LIMIT %[6]d) pre
		JOIN chunks c ON c.id = pre.id, q
		ORDER BY r DESC, c.id
		LIMIT %[2]d) s
),
fused AS (
	SELECT id, sum(1.0 / (%[3]d + rank)) AS score, bool_or(leg = 'vector') AS by_vector, min(dist) AS dist FROM (
		SELECT id, rank, 'vector' AS leg, dist FROM vec UNION ALL SELECT id, rank, 'fulltext', NULL FROM fts) u
	GROUP BY id
),
best AS (
	SELECT DISTINCT ON (c.page_id) c.page_id, c.id, f.score, f.by_vector, f.dist
	FROM fused f JOIN chunks c ON c.id = f.id
	ORDER BY c.page_id, f.score DESC, c.ord
)
SELECT p.title, p.url, c.anchor,
       CASE WHEN numnode(q.aq) > 0
            THEN ts_headline(c.ts_config, c.body, q.aq, 'MaxWords=32, MinWords=16, MaxFragments=2, FragmentDelimiter=" … ", StartSel=**, StopSel=**')
            ELSE left(c.body, 240) END,
       b.score,
       array_remove(ARRAY[
           CASE WHEN b.by_vector THEN 'vector' END,
           CASE WHEN numnode(q.fq) > 0 AND c.tsv @@ q.fq THEN 'fulltext' END,
           CASE WHEN numnode(q.sq) > 0 AND c.tsv @@ q.sq THEN 'synonym' END,
           CASE WHEN numnode(q.cq) > 0 AND c.tsv @@ q.cq THEN 'corrected' END], NULL),
       coalesce(b.dist, 2),
       -- The share of the query's words (stop words of English and German aside) the chunk
       -- holds, in any of the three parsings: how relevance is told without a model.
       (SELECT coalesce(avg((c.tsv @@ words.t)::int), 0)::float8 FROM words),
       -- The generation of the vectors searched: a query vector made for another missed.
       coalesce((SELECT generation FROM index_meta), 0)
FROM best b JOIN chunks c ON c.id = b.id JOIN pages p ON p.id = b.page_id, q
ORDER BY b.score DESC, p.url
LIMIT $3`

// SearchSQL is the statement SiteIndex.Search runs for embeddings of dims dimensions, with
// parameters (text, vector, limit, lang, pathPrefix, synonyms, corrections, analyze,
// generation: the vector half runs only on the vectors of that generation, 0 any):
// for a search with a language or a path prefix (filtered), or for one without, which
// leaves the pages out of the candidates' search and answers nothing unless lang and
// pathPrefix are empty. Benchmarks run it directly.
func SearchSQL(dims int, filtered bool) string {
	return searchSQLOn("embedding", dims, filtered)
}

// searchSQLOn is SearchSQL with the vector half on column: embedding, or a rebuild's
// embedding_next (Candidate).
func searchSQLOn(column string, dims int, filtered bool) string {
	join, where := "", " AND $4 = '' AND $5 = ''"
	if filtered {
		join, where = " JOIN pages p ON p.id = c.page_id", " AND ($4 = '' OR p.lang = $4) AND p.path LIKE $5 || '%'"
	}
	return fmt.Sprintf(searchSQL, dims, candidates, rrfK, allCandidates, termCandidates, preRanked, join, where, column)
}

// instantSQL is search_site's as-you-type search, full-text only: every word typed so far
// must match (one of its alternatives: the word, its correction, its synonyms; in any of
// the three parsings), and the word being typed through one of the index's commonest
// words that start with it, so that each keystroke narrows the results as a visitor
// expects, and a rare word keeps the work small. Parameters (terms, prefix, limit, lang,
// pathPrefix); a term is its alternatives joined by '|'. At most instantCandidates chunks
// are ranked: a lone common word matches most of a large site, and any of those pages
// answers it as well as another.
const instantSQL = `
WITH terms AS (
	SELECT (SELECT string_agg('(' || t::text || ')', ' | ')::tsquery FROM (
		SELECT plainto_tsquery('sitetools_english', a) || plainto_tsquery('sitetools_german', a) || plainto_tsquery('sitetools_simple', a) AS t
		FROM unnest(string_to_array(term, '|')) a) alts WHERE numnode(t) > 0) AS t
	FROM unnest($1::text[]) term
	-- A stop word of English or German matches nearly every page: it narrows nothing.
	WHERE numnode(plainto_tsquery('sitetools_english', split_part(term, '|', 1))) > 0
	  AND numnode(plainto_tsquery('sitetools_german', split_part(term, '|', 1))) > 0
	UNION ALL
	SELECT string_agg('(' || t::text || ')', ' | ')::tsquery FROM (
		SELECT plainto_tsquery('sitetools_english', word) || plainto_tsquery('sitetools_german', word) || plainto_tsquery('sitetools_simple', word) AS t
		FROM (SELECT word FROM search_vocabulary
		      WHERE $2 <> '' AND word LIKE $2 || '%%'
		        AND numnode(plainto_tsquery('sitetools_english', word)) > 0 AND numnode(plainto_tsquery('sitetools_german', word)) > 0
		      ORDER BY ndoc DESC, word LIMIT %[1]d) v) p
	WHERE numnode(t) > 0
	HAVING count(*) > 0
),
q AS (SELECT string_agg('(' || t::text || ')', ' & ')::tsquery AS aq FROM terms WHERE t IS NOT NULL),
cand AS (
	SELECT c.id FROM chunks c JOIN pages p ON p.id = c.page_id, q
	WHERE q.aq IS NOT NULL AND c.tsv @@ q.aq AND ($4 = '' OR p.lang = $4) AND p.path LIKE $5 || '%%'
	LIMIT %[2]d
),
best AS (
	SELECT DISTINCT ON (c.page_id) c.page_id, c.id, ts_rank_cd(c.tsv, q.aq, 32) AS r
	FROM cand JOIN chunks c ON c.id = cand.id, q
	ORDER BY c.page_id, r DESC, c.ord
)
SELECT p.title, p.url, c.anchor,
       ts_headline(c.ts_config, c.body, q.aq, 'MaxWords=32, MinWords=16, MaxFragments=2, FragmentDelimiter=" … ", StartSel=**, StopSel=**'),
       b.r, ARRAY['fulltext'], 2::float8, 1::float8, 0::bigint
FROM best b JOIN chunks c ON c.id = b.id JOIN pages p ON p.id = b.page_id, q
ORDER BY b.r DESC, p.url
LIMIT $3`

// prefixWords is how many of the index's words a word being typed stands for, and
// instantCandidates how many matching chunks an instant search ranks at most.
const (
	prefixWords       = 8
	instantCandidates = 2000
)

// InstantSQL is the statement of search_site's instant mode; benchmarks run it directly.
func InstantSQL() string { return fmt.Sprintf(instantSQL, prefixWords, instantCandidates) }

// Search returns up to q.Limit pages, best first.
//
// How its statement is planned. A search with a language or a path prefix is planned for
// its arguments every time (an unnamed statement): a plan made without knowing them
// filters the pages first and measures the distance to every chunk instead of walking
// the HNSW index. So is an instant one: only a known prefix finds the words that start
// with it through the vocabulary's index. A search without (nearly every one) runs the
// statement that leaves the pages out, whose generic plan, made once per connection,
// walks the same indexes for every question as a plan made for it would, and spares
// planning it for each: on the demo, 3.0 ms of PostgreSQL's time a search instead of 4.9.
// PostgreSQL's own choice would keep planning it, its estimate of the generic plan being
// the higher, so the search asks for the generic plan within its own implicit
// transaction (set_config, local), sent in the same round trip.
func (s *SiteIndex) Search(ctx context.Context, q sitesearch.Query) ([]sitesearch.Hit, error) {
	var vec any
	dims := s.dims
	if q.Vector != nil {
		vec, dims = pgvector.NewVector(q.Vector), len(q.Vector)
	}
	if q.Instant {
		rows, err := s.db.Pool.Query(ctx, InstantSQL(), pgx.QueryExecModeExec, nonNil(q.Terms), q.Prefix, q.Limit, q.Lang, q.PathPrefix)
		hits, _, err := collectHits(rows, err)
		return hits, err
	}
	st := s.statementsFor(dims)
	args := []any{q.Text, vec, q.Limit, q.Lang, q.PathPrefix, nonNil(q.Synonyms), nonNil(q.Corrections), q.Analyze, q.Generation}
	var hits []sitesearch.Hit
	var gen int64
	if q.Lang != "" || q.PathPrefix != "" {
		rows, err := s.db.Pool.Query(ctx, st.filtered, append([]any{pgx.QueryExecModeExec}, args...)...)
		if hits, gen, err = collectHits(rows, err); err != nil {
			return nil, err
		}
	} else {
		b := &pgx.Batch{}
		b.Queue(GenericPlanSQL)
		b.Queue(st.unfiltered, args...).Query(func(rows pgx.Rows) error {
			var err error
			hits, gen, err = collectHits(rows, nil)
			return err
		})
		if err := s.db.Pool.SendBatch(ctx, b).Close(); err != nil {
			return nil, Wrap("postgres.SiteIndex.Search", err)
		}
	}
	return hits, s.checkGeneration(ctx, q, hits, gen)
}

// checkGeneration returns sitesearch.ErrIndexSwitched when q's vector was made for vectors
// a switch has since retired (SwitchRebuild): its vector half then found nothing. With no
// hit, the generation is read on its own.
func (s *SiteIndex) checkGeneration(ctx context.Context, q sitesearch.Query, hits []sitesearch.Hit, gen int64) error {
	if q.Vector == nil || q.Generation == 0 {
		return nil
	}
	if len(hits) == 0 {
		s.forgetLive()
		_, g, ok, err := s.Live(ctx)
		if err != nil || !ok {
			return err
		}
		gen = g
	}
	if gen != q.Generation {
		s.forgetLive()
		return sitesearch.ErrIndexSwitched
	}
	return nil
}

// GenericPlanSQL has the statements after it in its batch (one implicit transaction) run
// on their cached generic plan; benchmarks send it as the service does.
const GenericPlanSQL = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true)`

// collectHits reads the rows of a search, and the generation of the vectors it searched.
func collectHits(rows pgx.Rows, err error) ([]sitesearch.Hit, int64, error) {
	if err != nil {
		return nil, 0, Wrap("postgres.SiteIndex.Search", err)
	}
	var gen int64
	hits, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (sitesearch.Hit, error) {
		var h sitesearch.Hit
		err := r.Scan(&h.Title, &h.URL, &h.Anchor, &h.Snippet, &h.Score, &h.Matched, &h.Distance, &h.Coverage, &gen)
		return h, err
	})
	return hits, gen, Wrap("postgres.SiteIndex.Search", err)
}

// nonNil is s, or an empty list: an array parameter, never NULL.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Page finds a page by absolute URL or by path; nil when there is none.
func (s *SiteIndex) Page(ctx context.Context, urlOrPath string) (*sitesearch.StoredPage, error) {
	return NewSitePages(s.db).Page(ctx, urlOrPath)
}

// StoredVectors returns the stored embedding of each content hash the index holds.
func (s *SiteIndex) StoredVectors(ctx context.Context, hashes []string) (map[string][]float32, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT DISTINCT ON (content_hash) content_hash, embedding FROM chunks WHERE content_hash = ANY($1)`, hashes)
	if err != nil {
		return nil, Wrap("postgres.SiteIndex.StoredVectors", err)
	}
	defer rows.Close()
	known := map[string][]float32{}
	for rows.Next() {
		var h string
		var v pgvector.Vector
		if err := rows.Scan(&h, &v); err != nil {
			return nil, Wrap("postgres.SiteIndex.StoredVectors", err)
		}
		known[h] = v.Slice()
	}
	return known, Wrap("postgres.SiteIndex.StoredVectors", rows.Err())
}

// RemoveOthers removes the pages of source whose URL is not in keep, and returns how many.
func (s *SiteIndex) RemoveOthers(ctx context.Context, source string, keep []string) (int, error) {
	tag, err := s.db.Pool.Exec(ctx, `DELETE FROM pages WHERE source = $1 AND NOT (url = ANY($2))`, source, keep)
	if err != nil {
		return 0, Wrap("postgres.SiteIndex.RemoveOthers", err)
	}
	return int(tag.RowsAffected()), nil
}
