-- +goose Up

-- The words of the indexed pages, for typo tolerance: a query word that is not among
-- them is corrected to the closest that is (pg_trgm similarity, fuzzystrmatch's
-- Levenshtein distance). Ingest rebuilds it when pages change; ndoc is how many chunks
-- hold the word, so that of two equally close words the commoner wins. Both extensions
-- are trusted: the database owner may create them.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE EXTENSION IF NOT EXISTS fuzzystrmatch;

CREATE TABLE search_vocabulary (
    word  text    PRIMARY KEY,
    ndoc  integer NOT NULL
);
CREATE INDEX search_vocabulary_trgm ON search_vocabulary USING gin (word gin_trgm_ops);
CREATE INDEX search_vocabulary_prefix ON search_vocabulary (word text_pattern_ops);

INSERT INTO search_vocabulary (word, ndoc)
SELECT word, ndoc FROM ts_stat('SELECT to_tsvector(''simple'', context || '' '' || body) FROM chunks')
WHERE word ~ '^[[:alpha:]]{3,40}$';

-- +goose Down
DROP TABLE search_vocabulary;
