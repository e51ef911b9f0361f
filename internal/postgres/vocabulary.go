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

// candidatesSQL finds, for each word the vocabulary does not hold, that no chunk holds in
// another form (kommen for komme: the stemmers know it) and that is no stop word of
// English or German (a word of the other language, not a typo), the words that
// are close to it: by trigram similarity, and those of about its length that start with
// its letter and are at most two edits away. The words are sifted first, each once: most
// queries have none left, and then the search for close words never runs.
const candidatesSQL = `
WITH missing AS MATERIALIZED (
	SELECT w0, w FROM unnest($1::text[]) AS w0, unaccent(w0) AS w
	WHERE NOT EXISTS (SELECT 1 FROM search_vocabulary x WHERE x.word = w)
	  AND numnode(plainto_tsquery('english', w)) > 0 AND numnode(plainto_tsquery('german', w0)) > 0
	  AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.tsv @@ (plainto_tsquery('sitetools_english', w0) || plainto_tsquery('sitetools_german', w0)))
)
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
// hold; a word it holds has none.
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
		var c sitesearch.Candidate
		if err := rows.Scan(&w, &c.Word, &c.Chunks, &c.Similarity); err != nil {
			return nil, Wrap("postgres.SiteIndex.Candidates", err)
		}
		out[w] = append(out[w], c)
	}
	return out, Wrap("postgres.SiteIndex.Candidates", rows.Err())
}
