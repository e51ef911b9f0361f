package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/sitetools/sitetools/tools/sitesearch"
)

// vocabularySQL lists the words of the indexed chunks: sitetools_simple's lexemes
// (lower-case, without accents, not stemmed) that are 3 to 40 letters long.
const vocabularySQL = `SELECT word, ndoc FROM ts_stat('SELECT to_tsvector(''sitetools_simple'', context || '' '' || body) FROM chunks')
	WHERE word ~ '^[[:alpha:]]{3,40}$'`

// RebuildVocabulary replaces the vocabulary with the words the chunks hold now, in one
// transaction: a search never sees it half-built.
func (s *SiteIndex) RebuildVocabulary(ctx context.Context) error {
	return Wrap("postgres.SiteIndex.RebuildVocabulary", pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM search_vocabulary`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO search_vocabulary (word, ndoc) `+vocabularySQL)
		return err
	}))
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
