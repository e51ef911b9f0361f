-- +goose Up

-- Accents do not decide a match: "cafe" finds "café", "Buro" finds "Büro". Each language's
-- configuration gets a twin, sitetools_<language>, that removes accents (unaccent, a
-- trusted extension) before stemming; ingest writes chunks with the twins, search parses
-- queries with them, and the chunks already stored move to them here.
CREATE EXTENSION IF NOT EXISTS unaccent;

-- +goose StatementBegin
DO $$
DECLARE
    lang text;
BEGIN
    FOREACH lang IN ARRAY ARRAY['english', 'german', 'french', 'spanish', 'italian', 'dutch', 'portuguese',
                                'swedish', 'danish', 'finnish', 'norwegian', 'russian'] LOOP
        EXECUTE format('CREATE TEXT SEARCH CONFIGURATION %I (COPY = %I)', 'sitetools_' || lang, lang);
        EXECUTE format('ALTER TEXT SEARCH CONFIGURATION %I ALTER MAPPING FOR word, hword, hword_part WITH unaccent, %I',
                       'sitetools_' || lang, lang || '_stem');
    END LOOP;
    CREATE TEXT SEARCH CONFIGURATION sitetools_simple (COPY = simple);
    ALTER TEXT SEARCH CONFIGURATION sitetools_simple ALTER MAPPING FOR word, hword, hword_part WITH unaccent, simple;
END
$$;
-- +goose StatementEnd

UPDATE chunks SET ts_config = ('sitetools_' || ts_config::text)::regconfig
WHERE ts_config::text NOT LIKE 'sitetools\_%';
ALTER TABLE chunks ALTER COLUMN ts_config SET DEFAULT 'sitetools_simple';

DELETE FROM search_vocabulary;
INSERT INTO search_vocabulary (word, ndoc)
SELECT word, ndoc FROM ts_stat('SELECT to_tsvector(''sitetools_simple'', context || '' '' || body) FROM chunks')
WHERE word ~ '^[[:alpha:]]{3,40}$';

-- +goose Down
UPDATE chunks SET ts_config = substr(ts_config::text, 11)::regconfig WHERE ts_config::text LIKE 'sitetools\_%';
ALTER TABLE chunks ALTER COLUMN ts_config SET DEFAULT 'simple';
-- +goose StatementBegin
DO $$
DECLARE
    cfg text;
BEGIN
    FOR cfg IN SELECT cfgname FROM pg_ts_config WHERE cfgname LIKE 'sitetools\_%' LOOP
        EXECUTE format('DROP TEXT SEARCH CONFIGURATION %I', cfg);
    END LOOP;
END
$$;
-- +goose StatementEnd
