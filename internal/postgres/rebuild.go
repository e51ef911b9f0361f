package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/sitetools/sitetools/tools/sitesearch"
)

// A rebuild makes the vectors of another model (or dimension, or prefixes) beside the live
// ones: each chunk's new vector goes into chunks.embedding_next, its HNSW index is built
// once every chunk has one, and one transaction makes them the live ones (SwitchRebuild).
// Search answers from the live vectors until then. index_rebuild records the model being
// built, so that an interrupted rebuild resumes where it stopped, or is dropped when
// another model is asked for: the live index is never half switched.

// BeginRebuild starts a rebuild for m, or resumes the one under way for m; one for another
// model is dropped first. It returns the chunks that still need a vector and all of them.
func (s *SiteIndex) BeginRebuild(ctx context.Context, m sitesearch.IndexModel) (sitesearch.RebuildState, error) {
	var st sitesearch.RebuildState
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		var have sitesearch.IndexModel
		err := tx.QueryRow(ctx, `SELECT model, dimensions, query_prefix, document_prefix FROM index_rebuild FOR UPDATE`).
			Scan(&have.Name, &have.Dimensions, &have.QueryPrefix, &have.DocumentPrefix)
		switch {
		case err == nil && have == m:
			st.Resumed = true
			return nil
		case err == nil:
			if err := dropNext(ctx, tx); err != nil {
				return err
			}
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		default:
			// No rebuild recorded: vectors left by one that was not (a crash between its
			// steps is not possible, but a restore of a dump is) are not trusted.
			if err := dropNext(ctx, tx); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `INSERT INTO index_rebuild (model, dimensions, query_prefix, document_prefix) VALUES ($1, $2, $3, $4)`,
			m.Name, m.Dimensions, m.QueryPrefix, m.DocumentPrefix)
		return err
	})
	if err != nil {
		return st, Wrap("postgres.SiteIndex.BeginRebuild", err)
	}
	err = s.db.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE embedding_next IS NULL), count(*) FROM chunks`).Scan(&st.Left, &st.Total)
	return st, Wrap("postgres.SiteIndex.BeginRebuild", err)
}

// dropNext forgets the vectors of a rebuild and their HNSW index. Dropping and adding
// the column again is a change of the catalog alone, where setting every row to NULL would
// write the whole table.
func dropNext(ctx context.Context, tx pgx.Tx) error {
	for _, sql := range []string{
		`DELETE FROM index_rebuild`,
		`ALTER TABLE chunks DROP COLUMN IF EXISTS embedding_next`,
		`ALTER TABLE chunks ADD COLUMN embedding_next vector`,
	} {
		if _, err := tx.Exec(ctx, sql); err != nil {
			return err
		}
	}
	return nil
}

// DropRebuild abandons the rebuild under way, if any.
func (s *SiteIndex) DropRebuild(ctx context.Context) error {
	return Wrap("postgres.SiteIndex.DropRebuild", pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error { return dropNext(ctx, tx) }))
}

// PendingChunks returns up to n chunks after the id after that have no vector of the
// rebuild yet, in the order of their ids, each with the text its vector is made of (less
// the document prefix). Reading on from the last id walks the chunks once in a rebuild,
// not again past every chunk made so far at each batch.
func (s *SiteIndex) PendingChunks(ctx context.Context, after int64, n int) ([]sitesearch.PendingChunk, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT id, context || E'\n\n' || body FROM chunks
		WHERE id > $1 AND embedding_next IS NULL ORDER BY id LIMIT $2`, after, n)
	if err != nil {
		return nil, Wrap("postgres.SiteIndex.PendingChunks", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (sitesearch.PendingChunk, error) {
		var c sitesearch.PendingChunk
		err := r.Scan(&c.ID, &c.Text)
		return c, err
	})
	return out, Wrap("postgres.SiteIndex.PendingChunks", err)
}

// PutNextVectors stores the rebuild's vectors of chunks ids, in one statement; a chunk
// removed meanwhile is left out.
func (s *SiteIndex) PutNextVectors(ctx context.Context, ids []int64, vecs [][]float32) error {
	if len(ids) != len(vecs) {
		return fmt.Errorf("postgres.SiteIndex.PutNextVectors: %d ids, %d vectors", len(ids), len(vecs))
	}
	vs := make([]pgvector.Vector, len(vecs))
	for i, v := range vecs {
		vs[i] = pgvector.NewVector(v)
	}
	_, err := s.db.Pool.Exec(ctx, `UPDATE chunks SET embedding_next = u.v FROM unnest($1::bigint[], $2::vector[]) AS u(id, v)
		WHERE chunks.id = u.id`, ids, vs)
	return Wrap("postgres.SiteIndex.PutNextVectors", err)
}

// SwitchRebuild makes the rebuild for m the live index: it builds the HNSW index of the
// new vectors (searches go on meanwhile), then, in one transaction that holds the chunks
// for a moment, retires the live vectors and their index, makes the new ones live,
// records m with the next generation and forgets the rebuild. A chunk without a vector of
// the rebuild is an error, and nothing is switched.
func (s *SiteIndex) SwitchRebuild(ctx context.Context, m sitesearch.IndexModel) error {
	var left, total int
	if err := s.db.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE embedding_next IS NULL), count(*) FROM chunks`).Scan(&left, &total); err != nil {
		return Wrap("postgres.SiteIndex.SwitchRebuild", err)
	}
	if left > 0 {
		return fmt.Errorf("postgres.SiteIndex.SwitchRebuild: %d chunks have no vector of %s yet", left, m)
	}
	// An index without chunks gets its HNSW index once its first load is written (Finish).
	next := fmt.Sprintf("chunks_embedding_next_hnsw_%d", m.Dimensions)
	if total > 0 {
		if err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
			return buildHNSW(ctx, tx, next, "embedding_next", m.Dimensions)
		}); err != nil {
			return Wrap("postgres.SiteIndex.SwitchRebuild", err)
		}
	}
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		var have sitesearch.IndexModel
		err := tx.QueryRow(ctx, `SELECT model, dimensions, query_prefix, document_prefix FROM index_rebuild FOR UPDATE`).
			Scan(&have.Name, &have.Dimensions, &have.QueryPrefix, &have.DocumentPrefix)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && have != m) {
			return fmt.Errorf("the rebuild under way is not for %s", m)
		}
		if err != nil {
			return err
		}
		if err := dropLiveHNSW(ctx, tx); err != nil {
			return err
		}
		for _, sql := range []string{
			`ALTER TABLE chunks RENAME COLUMN embedding TO embedding_retired`,
			`ALTER TABLE chunks RENAME COLUMN embedding_next TO embedding`,
			`ALTER TABLE chunks DROP COLUMN embedding_retired`,
			`ALTER TABLE chunks ADD COLUMN embedding_next vector`,
			fmt.Sprintf(`ALTER INDEX IF EXISTS %s RENAME TO chunks_embedding_hnsw_%d`, next, m.Dimensions),
			`DELETE FROM index_rebuild`,
		} {
			if _, err := tx.Exec(ctx, sql); err != nil {
				return err
			}
		}
		// Cached query vectors of the model before answer no search any more.
		if _, err := tx.Exec(ctx, `DELETE FROM embedding_cache WHERE model <> $1`, m.Name); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO index_meta (model, dimensions, query_prefix, document_prefix) VALUES ($1, $2, $3, $4)
			ON CONFLICT (singleton) DO UPDATE SET model = EXCLUDED.model, dimensions = EXCLUDED.dimensions,
				query_prefix = EXCLUDED.query_prefix, document_prefix = EXCLUDED.document_prefix,
				generation = index_meta.generation + 1, updated_at = now()`, m.Name, m.Dimensions, m.QueryPrefix, m.DocumentPrefix)
		return err
	})
	if err == nil {
		s.forgetLive()
	}
	return Wrap("postgres.SiteIndex.SwitchRebuild", err)
}

// dropLiveHNSW drops the HNSW indexes of the live vectors, of any dimension.
func dropLiveHNSW(ctx context.Context, tx pgx.Tx) error {
	rows, err := tx.Query(ctx, `SELECT indexname FROM pg_indexes
		WHERE schemaname = current_schema() AND tablename = 'chunks' AND indexname LIKE 'chunks\_embedding\_hnsw\_%'`)
	if err != nil {
		return err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, n := range names {
		if _, err := tx.Exec(ctx, `DROP INDEX `+pgx.Identifier{n}.Sanitize()); err != nil {
			return err
		}
	}
	return nil
}

// RebuildProgress reports the rebuild under way: its model, when it started, and how many
// chunks have their new vector of all; ok false when none is.
func (s *SiteIndex) RebuildProgress(ctx context.Context) (p sitesearch.RebuildProgress, ok bool, err error) {
	err = s.db.Pool.QueryRow(ctx, `SELECT r.model, r.dimensions, r.query_prefix, r.document_prefix, r.started_at,
			(SELECT count(*) FROM chunks WHERE embedding_next IS NOT NULL), (SELECT count(*) FROM chunks)
		FROM index_rebuild r`).Scan(&p.Model.Name, &p.Model.Dimensions, &p.Model.QueryPrefix, &p.Model.DocumentPrefix, &p.Started, &p.Done, &p.Total)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, false, nil
	}
	return p, err == nil, Wrap("postgres.SiteIndex.RebuildProgress", err)
}

// liveTTL is how long Live trusts what it read of index_meta: a switch on another process
// is seen within it, and a search that raced it runs again (ErrIndexSwitched).
const liveTTL = time.Second

// liveModel is what Live read, and when.
type liveModel struct {
	model sitesearch.IndexModel
	gen   int64
	ok    bool
	at    time.Time
}

// liveCache is the SiteIndex's last read of index_meta.
type liveCache struct {
	mu   sync.Mutex
	last liveModel
}

// Candidate returns the index of the rebuild under way (or stopped) for another model:
// searches on it compare with the vectors made so far beside the live ones (a chunk not
// yet made is not found by the vector half), with queries embedded by the rebuild's model,
// so that an owner can measure it before it switches (`sitetools eval --candidate`). ok is
// false when there is no rebuild. Its vectors have no HNSW index before the switch: the
// vector half measures every chunk, which is exact and, for an evaluation, fast enough.
func (s *SiteIndex) Candidate(ctx context.Context) (c *SiteIndex, m sitesearch.IndexModel, ok bool, err error) {
	err = s.db.Pool.QueryRow(ctx, `SELECT model, dimensions, query_prefix, document_prefix FROM index_rebuild`).
		Scan(&m.Name, &m.Dimensions, &m.QueryPrefix, &m.DocumentPrefix)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, m, false, nil
	}
	if err != nil {
		return nil, m, false, Wrap("postgres.SiteIndex.Candidate", err)
	}
	model := m
	return &SiteIndex{db: s.db, dims: m.Dimensions, candidate: &model}, m, true, nil
}

// Live returns the model the live vectors were made with and its generation, or ok false
// for an empty index; read at most once a liveTTL. For a Candidate, it is the rebuild's
// model, of no generation.
func (s *SiteIndex) Live(ctx context.Context) (m sitesearch.IndexModel, gen int64, ok bool, err error) {
	if s.candidate != nil {
		return *s.candidate, 0, true, nil
	}
	s.live.mu.Lock()
	last := s.live.last
	s.live.mu.Unlock()
	if !last.at.IsZero() && time.Since(last.at) < liveTTL {
		return last.model, last.gen, last.ok, nil
	}
	var l liveModel
	err = s.db.Pool.QueryRow(ctx, `SELECT model, dimensions, query_prefix, document_prefix, generation FROM index_meta`).
		Scan(&l.model.Name, &l.model.Dimensions, &l.model.QueryPrefix, &l.model.DocumentPrefix, &l.gen)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return m, 0, false, Wrap("postgres.SiteIndex.Live", err)
	default:
		l.ok = true
	}
	l.at = time.Now()
	s.live.mu.Lock()
	s.live.last = l
	s.live.mu.Unlock()
	return l.model, l.gen, l.ok, nil
}

// forgetLive makes the next Live read index_meta.
func (s *SiteIndex) forgetLive() {
	s.live.mu.Lock()
	s.live.last = liveModel{}
	s.live.mu.Unlock()
}

// buildHNSW creates the HNSW index name over column's vectors of dims dimensions unless it
// exists, with enough maintenance_work_mem for the graph of the rows there are.
func buildHNSW(ctx context.Context, tx pgx.Tx, name, column string, dims int) error {
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass(quote_ident(current_schema()) || '.' || quote_ident($1)) IS NOT NULL`, name).Scan(&exists); err != nil || exists {
		return err
	}
	var rows, have int64
	if err := tx.QueryRow(ctx, `SELECT count(*), pg_size_bytes(current_setting('maintenance_work_mem')) FROM chunks`).Scan(&rows, &have); err != nil {
		return err
	}
	if want := vectorIndexMemory(rows, dims); want > have {
		if _, err := tx.Exec(ctx, fmt.Sprintf(`SET LOCAL maintenance_work_mem = '%dkB'`, want>>10)); err != nil {
			return err
		}
	}
	_, err := tx.Exec(ctx, fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %s ON chunks USING hnsw ((%s::vector(%d)) vector_cosine_ops)`,
		pgx.Identifier{name}.Sanitize(), pgx.Identifier{column}.Sanitize(), dims))
	return err
}
