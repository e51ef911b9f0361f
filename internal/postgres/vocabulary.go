package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/sitetools/sitetools/tools/sitesearch"
)

// chunkWords is the tsvector of a chunk's words, of a row with its context and body, and
// vocabularyWord the pattern a word of it must match to be in the vocabulary:
// sitetools_simple's lexemes (lower-case, without accents, not stemmed) of 3 to 40
// letters. The rebuild and the upkeep page by page count the same words through them.
const (
	chunkWords     = `to_tsvector('sitetools_simple', context || ' ' || body)`
	vocabularyWord = `'^[[:alpha:]]{3,40}$'`
)

// vocabularySQL lists the words of the indexed chunks, each with the number of chunks
// that hold it.
var vocabularySQL = `SELECT word, ndoc FROM ts_stat('` + strings.ReplaceAll(`SELECT `+chunkWords+` FROM chunks`, `'`, `''`) + `')
	WHERE word ~ ` + vocabularyWord

// RebuildVocabulary replaces the vocabulary with the words the chunks hold now, in one
// transaction: a search never sees it half-built. It locks the vocabulary against writes
// first (searches still read it): a page written meanwhile is counted either here, having
// committed before, or by its own upkeep after, never twice nor not at all.
func (s *SiteIndex) RebuildVocabulary(ctx context.Context) error {
	return Wrap("postgres.SiteIndex.RebuildVocabulary", pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE search_vocabulary IN EXCLUSIVE MODE`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM search_vocabulary`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO search_vocabulary (word, ndoc) `+vocabularySQL)
		return err
	}))
}

// vocabularyChangeSQL is the upkeep of the vocabulary for a write that removes the chunks
// of the first %s and adds those of the second (each a query of two columns, a chunk's
// context and body): each word's ndoc gains the chunks added that hold it and loses the chunks
// removed, counted as vocabularySQL counts them, a word once a chunk. A word whose count
// does not change is not written. The words are written in sorted order, so that writes
// side by side (of other replicas too) that share words wait for each other, never for a
// deadlock. A statement cannot update a row and then delete it: the words brought to 0
// are named in a setting local to the transaction, for vocabularyPruneSQL to delete.
const vocabularyChangeSQL = `
WITH delta AS (
	SELECT w.lexeme AS word, sum(d.sign) AS n
	FROM (SELECT -1, * FROM (%s) AS o(context, body) UNION ALL SELECT 1, * FROM (%s) AS n(context, body)) AS d(sign, context, body)
	CROSS JOIN LATERAL unnest(` + chunkWords + `) w
	WHERE w.lexeme ~ ` + vocabularyWord + `
	GROUP BY w.lexeme
	HAVING sum(d.sign) <> 0
),
changed AS (
	INSERT INTO search_vocabulary AS v (word, ndoc) SELECT word, n FROM delta ORDER BY word
	ON CONFLICT (word) DO UPDATE SET ndoc = v.ndoc + EXCLUDED.ndoc
	RETURNING word, ndoc
)
SELECT set_config('sitetools.vocabulary_gone', coalesce((SELECT array_agg(word) FROM changed WHERE ndoc <= 0), '{}')::text, true)`

// vocabularyPruneSQL deletes the words vocabularyChangeSQL brought to 0, rows its
// transaction holds locked already. (A negative count, of a vocabulary that had missed a
// word, goes too.)
const vocabularyPruneSQL = `DELETE FROM search_vocabulary
	WHERE word = ANY(coalesce(nullif(current_setting('sitetools.vocabulary_gone', true), ''), '{}')::text[]) AND ndoc <= 0`

// noChunks is a write's query of chunks added when it adds none.
const noChunks = `SELECT NULL::text, NULL::text WHERE false`

// queueVocabularyChange queues in b the upkeep of the vocabulary for a write that removes
// the chunks removed selects and adds those added selects, with the arguments args. It
// must run in the write's transaction (a batch is one), after the pages written are
// locked, and before the chunks change: removed reads the chunks as they are.
func queueVocabularyChange(b *pgx.Batch, removed, added string, args ...any) {
	b.Queue(fmt.Sprintf(vocabularyChangeSQL, removed, added), args...)
	b.Queue(vocabularyPruneSQL)
}

// candidatesSQL sifts the query's words, each once: a word the vocabulary holds, that a
// chunk holds in another form (kommen for komme: the stemmers know it) or that is a stop
// word of English or German (a word of the other language, not a typo) is held, and comes
// back alone, with no candidate. Most queries have no other word, and then the search
// for close words never runs. For each other word, the words close to it: by trigram
// similarity, and those of about its length that start with its letter and are at most
// two edits away.
const candidatesSQL = `
WITH words AS MATERIALIZED (
	SELECT DISTINCT w0, unaccent(w0) AS w FROM unnest($1::text[]) AS w0
),
missing AS MATERIALIZED (
	SELECT w0, w FROM words
	WHERE NOT EXISTS (SELECT 1 FROM search_vocabulary x WHERE x.word = w)
	  AND numnode(plainto_tsquery('english', w)) > 0 AND numnode(plainto_tsquery('german', w0)) > 0
	  AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.tsv @@ (plainto_tsquery('sitetools_english', w0) || plainto_tsquery('sitetools_german', w0)))
)
SELECT w0, NULL, NULL, NULL FROM words WHERE w0 NOT IN (SELECT w0 FROM missing)
UNION ALL
SELECT w0, v.word, v.ndoc, similarity(v.word, w)
FROM missing CROSS JOIN LATERAL (
	(SELECT word, ndoc FROM search_vocabulary WHERE word % w ORDER BY word <-> w LIMIT 20)
	UNION
	(SELECT word, ndoc FROM search_vocabulary
	 WHERE word LIKE left(w, 1) || '%' AND length(word) BETWEEN length(w) - 1 AND length(w) + 1
	   AND levenshtein_less_equal(word, w, 2) <= 2
	 LIMIT 50)
) AS v`

// Candidates returns the indexed words close to each of words that the index does not
// hold; a word it holds is there with none.
func (s *SiteIndex) Candidates(ctx context.Context, words []string) (map[string][]sitesearch.Candidate, error) {
	out := map[string][]sitesearch.Candidate{}
	if len(words) == 0 {
		return out, nil
	}
	rows, err := s.db.Pool.Query(ctx, candidatesSQL, words)
	if err != nil {
		return nil, Wrap("postgres.SiteIndex.Candidates", err)
	}
	defer rows.Close()
	for rows.Next() {
		var w string
		var word *string
		var chunks *int
		var similarity *float64
		if err := rows.Scan(&w, &word, &chunks, &similarity); err != nil {
			return nil, Wrap("postgres.SiteIndex.Candidates", err)
		}
		if word == nil {
			out[w] = nil // held
			continue
		}
		out[w] = append(out[w], sitesearch.Candidate{Word: *word, Chunks: *chunks, Similarity: *similarity})
	}
	return out, Wrap("postgres.SiteIndex.Candidates", rows.Err())
}
