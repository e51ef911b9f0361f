package sitesearch

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/sitetools/sitetools/internal/postgres"
)

// Store is the search index in PostgreSQL: pages, their chunks with embeddings and
// full-text vectors, and which model produced the embeddings.
type Store struct {
	db   *postgres.DB
	dims int
}

// NewStore returns the index for embeddings of dims dimensions.
func NewStore(db *postgres.DB, dims int) *Store { return &Store{db: db, dims: dims} }

// ErrModelMismatch means the index holds vectors of another model or dimension.
type ErrModelMismatch struct {
	HaveModel, WantModel string
	HaveDims, WantDims   int
}

func (e *ErrModelMismatch) Error() string {
	return fmt.Sprintf("the search index holds embeddings of %s (%d dimensions), but this configuration uses %s (%d dimensions); "+
		"vectors of two models cannot be mixed: re-ingest the site with `sitetools ingest --reindex ...`, or configure the model the index was built with",
		e.HaveModel, e.HaveDims, e.WantModel, e.WantDims)
}

// CheckModel returns an *ErrModelMismatch when the index was built by another model or
// dimension. An empty index matches anything.
func (s *Store) CheckModel(ctx context.Context, model string, dims int) error {
	var haveModel string
	var haveDims int
	err := s.db.Pool.QueryRow(ctx, `SELECT model, dimensions FROM index_meta`).Scan(&haveModel, &haveDims)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return postgres.Wrap("sitesearch.CheckModel", err)
	}
	if haveModel != model || haveDims != dims {
		return &ErrModelMismatch{HaveModel: haveModel, WantModel: model, HaveDims: haveDims, WantDims: dims}
	}
	return nil
}

// prepare records the model and makes sure the HNSW index for the dimension exists.
// With reset, every page and chunk is removed first (a re-index with another model).
func (s *Store) prepare(ctx context.Context, model string, dims int, reset bool) error {
	tx, err := s.db.Pool.Begin(ctx)
	if err != nil {
		return postgres.Wrap("sitesearch.prepare", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if reset {
		if _, err := tx.Exec(ctx, `TRUNCATE pages, chunks, embedding_cache`); err != nil {
			return postgres.Wrap("sitesearch.prepare", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM index_meta`); err != nil {
			return postgres.Wrap("sitesearch.prepare", err)
		}
		// The HNSW index of another dimension would refuse the new vectors.
		rows, err := tx.Query(ctx, `SELECT indexname FROM pg_indexes WHERE tablename = 'chunks' AND indexname LIKE 'chunks_embedding_hnsw_%'`)
		if err != nil {
			return postgres.Wrap("sitesearch.prepare", err)
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return postgres.Wrap("sitesearch.prepare", err)
		}
		for _, n := range names {
			if _, err := tx.Exec(ctx, `DROP INDEX `+pgx.Identifier{n}.Sanitize()); err != nil {
				return postgres.Wrap("sitesearch.prepare", err)
			}
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO index_meta (model, dimensions) VALUES ($1, $2)
		ON CONFLICT (singleton) DO UPDATE SET updated_at = now()
		WHERE index_meta.model = EXCLUDED.model AND index_meta.dimensions = EXCLUDED.dimensions`, model, dims); err != nil {
		return postgres.Wrap("sitesearch.prepare", err)
	}
	if _, err := tx.Exec(ctx, fmt.Sprintf(`CREATE INDEX IF NOT EXISTS chunks_embedding_hnsw_%[1]d ON chunks
		USING hnsw ((embedding::vector(%[1]d)) vector_cosine_ops)`, dims)); err != nil {
		return postgres.Wrap("sitesearch.prepare", err)
	}
	return postgres.Wrap("sitesearch.prepare", tx.Commit(ctx))
}

// Hit is one search result: the best chunk of one page.
type Hit struct {
	Title   string  `json:"title"`
	URL     string  `json:"url"`
	Anchor  string  `json:"anchor,omitempty"`
	Snippet string  `json:"snippet"`
	Score   float64 `json:"score"`
}

// Query is what Search looks for.
type Query struct {
	Text       string
	Vector     []float32 // nil: full-text only
	Limit      int
	Lang       string // "" any
	PathPrefix string // "" any
}

// candidates is how many chunks each ranking contributes to the fusion.
const candidates = 40

// rrfK is reciprocal rank fusion's constant.
const rrfK = 60

// searchSQL fuses a vector kNN ranking and a full-text ranking of chunks by reciprocal
// rank fusion, keeps each page's best chunk, and builds its snippet: one round trip.
// The full-text query ORs the query's lexemes under English, German and simple parsing,
// so a question needs not contain every word of a page.
const searchSQL = `
WITH q AS (
	SELECT (coalesce(en.q, ''::tsquery) || coalesce(de.q, ''::tsquery) || coalesce(si.q, ''::tsquery)) AS fq
	FROM (SELECT string_agg(quote_literal(l), ' | ')::tsquery AS q FROM unnest(tsvector_to_array(to_tsvector('english', $1))) l) en,
	     (SELECT string_agg(quote_literal(l), ' | ')::tsquery AS q FROM unnest(tsvector_to_array(to_tsvector('german', $1))) l) de,
	     (SELECT string_agg(quote_literal(l), ' | ')::tsquery AS q FROM unnest(tsvector_to_array(to_tsvector('simple', $1))) l) si
),
vec AS (
	SELECT id, row_number() OVER (ORDER BY dist) AS rank FROM (
		SELECT c.id, c.embedding::vector(%[1]d) <=> $2::vector(%[1]d) AS dist
		FROM chunks c JOIN pages p ON p.id = c.page_id
		WHERE $2::vector IS NOT NULL AND ($4 = '' OR p.lang = $4) AND p.path LIKE $5 || '%%'
		ORDER BY c.embedding::vector(%[1]d) <=> $2::vector(%[1]d)
		LIMIT %[2]d) s
),
fts AS (
	SELECT id, row_number() OVER (ORDER BY r DESC, id) AS rank FROM (
		SELECT c.id, ts_rank_cd(c.tsv, q.fq, 32) AS r
		FROM chunks c JOIN pages p ON p.id = c.page_id, q
		WHERE numnode(q.fq) > 0 AND c.tsv @@ q.fq AND ($4 = '' OR p.lang = $4) AND p.path LIKE $5 || '%%'
		ORDER BY r DESC, c.id
		LIMIT %[2]d) s
),
fused AS (
	SELECT id, sum(1.0 / (%[3]d + rank)) AS score FROM (SELECT * FROM vec UNION ALL SELECT * FROM fts) u GROUP BY id
),
best AS (
	SELECT DISTINCT ON (c.page_id) c.page_id, c.id, f.score
	FROM fused f JOIN chunks c ON c.id = f.id
	ORDER BY c.page_id, f.score DESC, c.ord
)
SELECT p.title, p.url, c.anchor,
       CASE WHEN numnode(q.fq) > 0
            THEN ts_headline(c.ts_config, c.body, q.fq, 'MaxWords=32, MinWords=16, MaxFragments=2, FragmentDelimiter=" … ", StartSel=**, StopSel=**')
            ELSE left(c.body, 240) END,
       b.score
FROM best b JOIN chunks c ON c.id = b.id JOIN pages p ON p.id = b.page_id, q
ORDER BY b.score DESC, p.url
LIMIT $3`

// SearchSQL is the statement Search runs for embeddings of dims dimensions, with
// parameters (text, vector, limit, lang, pathPrefix). Benchmarks run it directly.
func SearchSQL(dims int) string { return fmt.Sprintf(searchSQL, dims, candidates, rrfK) }

// Search returns up to q.Limit pages, best first.
func (s *Store) Search(ctx context.Context, q Query) ([]Hit, error) {
	var vec any
	if q.Vector != nil {
		vec = pgvector.NewVector(q.Vector)
	}
	rows, err := s.db.Pool.Query(ctx, SearchSQL(s.dims), q.Text, vec, q.Limit, q.Lang, q.PathPrefix)
	if err != nil {
		return nil, postgres.Wrap("sitesearch.Search", err)
	}
	hits, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Hit, error) {
		var h Hit
		err := r.Scan(&h.Title, &h.URL, &h.Anchor, &h.Snippet, &h.Score)
		return h, err
	})
	if err != nil {
		return nil, postgres.Wrap("sitesearch.Search", err)
	}
	for i := range hits {
		hits[i].Snippet = boundSnippet(hits[i].Snippet, maxSnippetRunes)
	}
	return hits, nil
}

const maxSnippetRunes = 320

func boundSnippet(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return strings.TrimSpace(string(r[:n])) + "…"
}

// StoredPage is a page as the index holds it.
type StoredPage struct {
	URL, Path, Title, Lang, Body string
}

// Page finds a page by absolute URL or by path; nil when there is none.
func (s *Store) Page(ctx context.Context, urlOrPath string) (*StoredPage, error) {
	var p StoredPage
	err := s.db.Pool.QueryRow(ctx, `SELECT url, path, title, lang, body FROM pages
		WHERE url = $1 OR path = $1 ORDER BY url = $1 DESC, url LIMIT 1`, urlOrPath).Scan(&p.URL, &p.Path, &p.Title, &p.Lang, &p.Body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, postgres.Wrap("sitesearch.Page", err)
	}
	return &p, nil
}
