package sitesearch

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/sitetools/sitetools/internal/costguard"
	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/postgres"
)

// Ingester keeps the index in step with a source of pages: unchanged pages cost
// nothing, changed pages re-embed only their changed chunks, and pages gone from the
// source are removed.
type Ingester struct {
	Store    *Store
	Embedder llm.Embedder
	Ledger   *costguard.Ledger // nil: embedding calls are not recorded
	Chunking ChunkOptions
	// BatchSize is how many chunks one embedding request carries (default 64).
	BatchSize int
	// Reindex drops the whole index first: needed to change model or dimension.
	Reindex bool
	// Progress is told about every page (nil: nothing).
	Progress func(IngestStats)
}

// IngestStats counts what one run did.
type IngestStats struct {
	Pages          int // seen in the source
	Unchanged      int
	Added          int
	Updated        int
	Removed        int
	Failed         int // pages the source could not deliver (crawl errors)
	ChunksEmbedded int
	ChunksReused   int
	EmbedCalls     int
	Tokens         int
}

func (s IngestStats) String() string {
	return fmt.Sprintf("%d pages: %d added, %d updated, %d unchanged, %d removed; %d chunks embedded in %d calls (%d tokens), %d reused",
		s.Pages, s.Added, s.Updated, s.Unchanged, s.Removed, s.ChunksEmbedded, s.EmbedCalls, s.Tokens, s.ChunksReused)
}

// Walk yields the documents of a source, one call of fn each. It returns the URLs it
// could not fetch this time (a timeout, a 5xx): their pages are kept as they are.
type Walk func(fn func(*Document) error) (failed []string, err error)

// Sync ingests every document that walk yields under the name source, then removes the
// pages of source that walk neither yielded nor failed to fetch.
func (in *Ingester) Sync(ctx context.Context, source string, walk Walk) (IngestStats, error) {
	var st IngestStats
	model, dims := in.Embedder.Model(), in.Embedder.Dimensions()
	if !in.Reindex {
		if err := in.Store.CheckModel(ctx, model, dims); err != nil {
			return st, err
		}
	}
	if err := in.Store.prepare(ctx, model, dims, in.Reindex); err != nil {
		return st, err
	}
	seen := map[string]bool{}
	failed, err := walk(func(doc *Document) error {
		if seen[doc.URL] {
			return nil
		}
		seen[doc.URL] = true
		st.Pages++
		if err := in.put(ctx, source, doc, &st); err != nil {
			return fmt.Errorf("%s: %w", doc.Path, err)
		}
		if in.Progress != nil {
			in.Progress(st)
		}
		return nil
	})
	if err != nil {
		return st, fmt.Errorf("sitesearch.Sync: %w", err)
	}
	st.Failed = len(failed)
	urls := make([]string, 0, len(seen)+len(failed))
	for u := range seen {
		urls = append(urls, u)
	}
	urls = append(urls, failed...)
	tag, err := in.Store.db.Pool.Exec(ctx, `DELETE FROM pages WHERE source = $1 AND NOT (url = ANY($2))`, source, urls)
	if err != nil {
		return st, postgres.Wrap("sitesearch.Sync", err)
	}
	st.Removed = int(tag.RowsAffected())
	return st, nil
}

func (in *Ingester) put(ctx context.Context, source string, doc *Document, st *IngestStats) error {
	pool := in.Store.db.Pool
	hash := DocumentHash(doc)
	var oldHash string
	err := pool.QueryRow(ctx, `SELECT content_hash FROM pages WHERE url = $1`, doc.URL).Scan(&oldHash)
	switch {
	case err == nil && oldHash == hash:
		st.Unchanged++
		// The page may have moved between sources; it is still present.
		_, err := pool.Exec(ctx, `UPDATE pages SET source = $2 WHERE url = $1 AND source <> $2`, doc.URL, source)
		return postgres.Wrap("sitesearch.put", err)
	case err == nil:
		st.Updated++
	case errors.Is(err, pgx.ErrNoRows):
		st.Added++
	default:
		return postgres.Wrap("sitesearch.put", err)
	}

	opts := in.Chunking
	if opts.Count == nil {
		opts.Count = llm.CountTokens
	}
	chunks := ChunkDocument(doc, opts)
	vectors, err := in.vectors(ctx, doc, chunks, st)
	if err != nil {
		return err
	}

	tx, err := pool.Begin(ctx)
	if err != nil {
		return postgres.Wrap("sitesearch.put", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var pageID int64
	err = tx.QueryRow(ctx, `INSERT INTO pages (url, path, title, lang, body, content_hash, source) VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (url) DO UPDATE SET path = EXCLUDED.path, title = EXCLUDED.title, lang = EXCLUDED.lang, body = EXCLUDED.body,
			content_hash = EXCLUDED.content_hash, source = EXCLUDED.source, updated_at = now()
		RETURNING id`, doc.URL, doc.Path, doc.Title, doc.Lang, pageBody(doc), hash, source).Scan(&pageID)
	if err != nil {
		return postgres.Wrap("sitesearch.put", err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM chunks WHERE page_id = $1`, pageID); err != nil {
		return postgres.Wrap("sitesearch.put", err)
	}
	// A batch, not COPY: regconfig has no binary input from text.
	cfg := tsConfig(doc.Lang)
	batch := &pgx.Batch{}
	for _, c := range chunks {
		batch.Queue(`INSERT INTO chunks (page_id, ord, heading, anchor, body, content_hash, ts_config, context, embedding)
			VALUES ($1, $2, $3, $4, $5, $6, $7::regconfig, $8, $9)`,
			pageID, c.Ord, c.Heading, c.Anchor, c.Text, c.Hash, cfg, contextLine(doc, c), pgvector.NewVector(vectors[c.Ord]))
	}
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return postgres.Wrap("sitesearch.put", err)
	}
	return postgres.Wrap("sitesearch.put", tx.Commit(ctx))
}

// vectors returns one embedding per chunk, reusing the stored embedding of any chunk
// whose content hash the index already holds, and embedding the rest in batches.
func (in *Ingester) vectors(ctx context.Context, doc *Document, chunks []Chunk, st *IngestStats) ([][]float32, error) {
	hashes := make([]string, len(chunks))
	for i, c := range chunks {
		hashes[i] = c.Hash
	}
	known := map[string][]float32{}
	rows, err := in.Store.db.Pool.Query(ctx, `SELECT DISTINCT ON (content_hash) content_hash, embedding FROM chunks WHERE content_hash = ANY($1)`, hashes)
	if err != nil {
		return nil, postgres.Wrap("sitesearch.vectors", err)
	}
	for rows.Next() {
		var h string
		var v pgvector.Vector
		if err := rows.Scan(&h, &v); err != nil {
			rows.Close()
			return nil, postgres.Wrap("sitesearch.vectors", err)
		}
		known[h] = v.Slice()
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, postgres.Wrap("sitesearch.vectors", err)
	}

	out := make([][]float32, len(chunks))
	var todo []int
	for i, c := range chunks {
		if v, ok := known[c.Hash]; ok && len(v) == in.Embedder.Dimensions() {
			out[i] = v
			st.ChunksReused++
		} else {
			todo = append(todo, i)
		}
	}
	batch := in.BatchSize
	if batch <= 0 {
		batch = 64
	}
	for start := 0; start < len(todo); start += batch {
		idx := todo[start:min(start+batch, len(todo))]
		texts := make([]string, len(idx))
		for j, i := range idx {
			texts[j] = embeddingText(doc, chunks[i])
		}
		res, err := in.Embedder.Embed(ctx, texts)
		st.EmbedCalls++
		if in.Ledger != nil {
			e := costguard.Entry{Kind: "embedding", Channel: "ingest", Tool: "ingest", Model: in.Embedder.Model(), Outcome: "ok"}
			if err != nil {
				e.Outcome = "error"
			} else {
				e.Tokens = res.Tokens
			}
			if lerr := in.Ledger.Record(ctx, e); lerr != nil && err == nil {
				return nil, lerr
			}
		}
		if err != nil {
			return nil, fmt.Errorf("embedding: %w", err)
		}
		if len(res.Vectors) != len(idx) {
			return nil, fmt.Errorf("embedding: %d vectors for %d texts", len(res.Vectors), len(idx))
		}
		st.Tokens += res.Tokens
		for j, i := range idx {
			out[i] = res.Vectors[j]
			known[chunks[i].Hash] = res.Vectors[j]
		}
		st.ChunksEmbedded += len(idx)
	}
	return out, nil
}

// contextLine is what a chunk is about: page title and section heading. It weighs more
// in full-text ranking.
func contextLine(doc *Document, c Chunk) string {
	if c.Heading == "" || c.Heading == doc.Title {
		return doc.Title
	}
	return doc.Title + " — " + c.Heading
}

func embeddingText(doc *Document, c Chunk) string {
	return contextLine(doc, c) + "\n\n" + c.Text
}

// pageBody is the page's indexed text as get_page returns it.
func pageBody(doc *Document) string {
	var b strings.Builder
	for _, s := range doc.Sections {
		if s.Heading != "" {
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(strings.Repeat("#", max(s.Level, 1)) + " " + s.Heading)
		}
		if s.Text != "" {
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(s.Text)
		}
	}
	return b.String()
}

// tsConfig is PostgreSQL's text search configuration for a language.
func tsConfig(lang string) string {
	switch lang {
	case "en":
		return "english"
	case "de":
		return "german"
	case "fr":
		return "french"
	case "es":
		return "spanish"
	case "it":
		return "italian"
	case "nl":
		return "dutch"
	case "pt":
		return "portuguese"
	case "sv":
		return "swedish"
	case "da":
		return "danish"
	case "fi":
		return "finnish"
	case "no", "nb":
		return "norwegian"
	case "ru":
		return "russian"
	}
	return "simple"
}
