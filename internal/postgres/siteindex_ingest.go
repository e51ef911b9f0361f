package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgvector/pgvector-go"

	"github.com/sitetools/sitetools/tools/sitesearch"
)

// PageStates returns the content hash, source and validators of every page, by URL.
func (s *SiteIndex) PageStates(ctx context.Context) (map[string]sitesearch.PageState, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT url, content_hash, source, coalesce(etag, ''), coalesce(last_modified, ''), lastmod, fetched_at FROM pages`)
	if err != nil {
		return nil, Wrap("postgres.SiteIndex.PageStates", err)
	}
	defer rows.Close()
	out := map[string]sitesearch.PageState{}
	// Nearly every page has one of a few sources: one copy of each, not one a page (at
	// 100 000 pages, megabytes of a sync's peak).
	sources := map[string]string{}
	var url string
	for rows.Next() {
		var st sitesearch.PageState
		var lastmod *time.Time
		if err := rows.Scan(&url, &st.Hash, &st.Source, &st.ETag, &st.LastModified, &lastmod, &st.Fetched); err != nil {
			return nil, Wrap("postgres.SiteIndex.PageStates", err)
		}
		if lastmod != nil {
			st.Lastmod = *lastmod
		}
		if src, ok := sources[st.Source]; ok {
			st.Source = src
		} else {
			sources[st.Source] = st.Source
		}
		out[url] = st
	}
	return out, Wrap("postgres.SiteIndex.PageStates", rows.Err())
}

// KeepPage records that an unchanged page now comes from source, with the validators of
// its latest response and sitemap entry, and when it was fetched in full if v says; a
// row with all of them already is not written.
func (s *SiteIndex) KeepPage(ctx context.Context, url, source string, v sitesearch.Validators) error {
	etag, lastModified, lastmod := validatorArgs(v)
	var fetched *time.Time
	if !v.Fetched.IsZero() {
		fetched = &v.Fetched
	}
	_, err := s.db.Pool.Exec(ctx, `UPDATE pages SET source = $2, etag = $3, last_modified = $4, lastmod = $5, fetched_at = coalesce($6, fetched_at)
		WHERE url = $1 AND (source <> $2 OR etag IS DISTINCT FROM $3 OR last_modified IS DISTINCT FROM $4 OR lastmod IS DISTINCT FROM $5
			OR fetched_at IS DISTINCT FROM coalesce($6, fetched_at))`,
		url, source, etag, lastModified, lastmod, fetched)
	return Wrap("postgres.SiteIndex.KeepPage", err)
}

// RemovePages removes the pages of urls, of any source, and returns how many it held; the
// vocabulary loses their chunks' words in the same transaction. The pages are locked
// first, in order, and only they are removed: a write of one of them under way has ended
// by then and its chunks are the ones counted, and a page first written meanwhile stays.
func (s *SiteIndex) RemovePages(ctx context.Context, urls []string) (int, error) {
	if len(urls) == 0 {
		return 0, nil
	}
	var removed int
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id FROM pages WHERE url = ANY($1) ORDER BY url FOR UPDATE`, urls)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil || len(ids) == 0 {
			return err
		}
		batch := &pgx.Batch{}
		queueVocabularyChange(batch, `SELECT context, body FROM chunks WHERE page_id = ANY($1)`, noChunks, ids)
		batch.Queue(`DELETE FROM pages WHERE id = ANY($1)`, ids).Exec(func(tag pgconn.CommandTag) error {
			removed = int(tag.RowsAffected())
			return nil
		})
		return tx.SendBatch(ctx, batch).Close()
	})
	if err != nil {
		return 0, Wrap("postgres.SiteIndex.RemovePages", err)
	}
	return removed, nil
}

// validatorArgs are v's columns: NULL for what is not known.
func validatorArgs(v sitesearch.Validators) (etag, lastModified *string, lastmod *time.Time) {
	if v.ETag != "" {
		etag = &v.ETag
	}
	if v.LastModified != "" {
		lastModified = &v.LastModified
	}
	if !v.Lastmod.IsZero() {
		lastmod = &v.Lastmod
	}
	return etag, lastModified, lastmod
}

// PutPage stores a page, replaces its chunks and records the index's model, all or
// nothing, in one round trip: the statements of a batch run in one implicit transaction.
// So a first ingest that fails before its first page leaves no model behind. (A batch,
// not COPY: regconfig has no binary input from text.) With vocabulary, the vocabulary
// loses the words of the chunks replaced and gains those of the new ones in the same
// transaction, after the page's row is locked: a write of the same page beside it has
// ended, and its chunks are the ones counted.
func (s *SiteIndex) PutPage(ctx context.Context, m sitesearch.IndexModel, p sitesearch.PageRecord, chunks []sitesearch.ChunkRecord, vocabulary bool) error {
	batch := &pgx.Batch{}
	etag, lastModified, lastmod := validatorArgs(p.Validators)
	var fetched *time.Time
	if !p.Fetched.IsZero() {
		fetched = &p.Fetched
	}
	batch.Queue(`INSERT INTO pages (url, path, title, lang, body, content_hash, source, etag, last_modified, lastmod, fetched_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, coalesce($11, now()))
		ON CONFLICT (url) DO UPDATE SET path = EXCLUDED.path, title = EXCLUDED.title, lang = EXCLUDED.lang, body = EXCLUDED.body,
			content_hash = EXCLUDED.content_hash, source = EXCLUDED.source, etag = EXCLUDED.etag,
			last_modified = EXCLUDED.last_modified, lastmod = EXCLUDED.lastmod, fetched_at = EXCLUDED.fetched_at, updated_at = now()`,
		p.URL, p.Path, p.Title, p.Lang, p.Body, p.Hash, p.Source, etag, lastModified, lastmod, fetched)
	n := len(chunks)
	ords, headings, anchors, bodies := make([]int32, n), make([]string, n), make([]string, n), make([]string, n)
	hashes, configs, contexts, vectors := make([]string, n), make([]string, n), make([]string, n), make([]pgvector.Vector, n)
	for i, c := range chunks {
		ords[i], headings[i], anchors[i], bodies[i] = int32(c.Ord), c.Heading, c.Anchor, c.Text
		hashes[i], configs[i], contexts[i], vectors[i] = c.Hash, c.TSConfig, c.Context, pgvector.NewVector(c.Vector)
	}
	if vocabulary {
		queueVocabularyChange(batch, `SELECT context, body FROM chunks WHERE page_id = (SELECT id FROM pages WHERE url = $1)`,
			`SELECT * FROM unnest($2::text[], $3::text[])`, p.URL, contexts, bodies)
	}
	batch.Queue(`DELETE FROM chunks WHERE page_id = (SELECT id FROM pages WHERE url = $1)`, p.URL)
	if n > 0 {
		// One statement for the page's chunks, not one a chunk: most of the cost of a short
		// INSERT is starting and ending it.
		batch.Queue(`INSERT INTO chunks (page_id, ord, heading, anchor, body, content_hash, ts_config, context, embedding)
			SELECT (SELECT id FROM pages WHERE url = $1), u.ord, u.heading, u.anchor, u.body, u.hash, u.config::regconfig, u.context, u.embedding
			FROM unnest($2::int[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::vector[])
				AS u(ord, heading, anchor, body, hash, config, context, embedding)`,
			p.URL, ords, headings, anchors, bodies, hashes, configs, contexts, vectors)
	}
	// The record is never replaced by another model's (CheckModel ran first), only
	// touched; last, so that pages written side by side wait for each other's row lock
	// only while they commit.
	batch.Queue(`INSERT INTO index_meta (model, dimensions, query_prefix, document_prefix) VALUES ($1, $2, $3, $4)
		ON CONFLICT (singleton) DO UPDATE SET updated_at = now()
		WHERE index_meta.model = EXCLUDED.model AND index_meta.dimensions = EXCLUDED.dimensions
			AND index_meta.query_prefix = EXCLUDED.query_prefix AND index_meta.document_prefix = EXCLUDED.document_prefix`, m.Name, m.Dimensions, m.QueryPrefix, m.DocumentPrefix)
	return Wrap("postgres.SiteIndex.PutPage", s.db.Pool.SendBatch(ctx, batch).Close())
}

// Finish builds the HNSW index Prepare deferred, over every chunk at once; with the index
// in place already, it does nothing.
func (s *SiteIndex) Finish(ctx context.Context, dims int) error {
	tx, err := s.db.Pool.Begin(ctx)
	if err != nil {
		return Wrap("postgres.SiteIndex.Finish", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if err := buildVectorIndex(ctx, tx, dims); err != nil {
		return Wrap("postgres.SiteIndex.Finish", err)
	}
	return Wrap("postgres.SiteIndex.Finish", tx.Commit(ctx))
}

// buildVectorIndex creates the HNSW index of chunks' embeddings of dims dimensions unless
// it exists, with enough maintenance_work_mem for the graph of the rows there are.
func buildVectorIndex(ctx context.Context, tx pgx.Tx, dims int) error {
	return buildHNSW(ctx, tx, fmt.Sprintf("chunks_embedding_hnsw_%d", dims), "embedding", dims)
}

// vectorIndexMemory is the maintenance_work_mem that keeps the HNSW graph of rows vectors
// of dims dimensions in memory while it is built: pgvector's build slows down several
// times once the graph outgrows it. pgvector needs about 2.4 kB a vector at 384
// dimensions; this allows 4·dims + 1.5 kB, and at most 1 GB.
func vectorIndexMemory(rows int64, dims int) int64 {
	return min(rows*int64(4*dims+1536), 1<<30)
}
