-- +goose Up

-- Stop words with accents are stop words: 00006 put unaccent before each language's
-- stemmer, whose stop-word list then saw "fur" for "für", "uber" for "über", "konn" for
-- "können", and kept them. Every German page matched every German question on its
-- filler words, ahead of the page that answers it. Each twin now looks a word up in its
-- language's stop-word list first, as written, then removes accents and stems.
-- +goose StatementBegin
DO $$
DECLARE
    lang text;
BEGIN
    FOREACH lang IN ARRAY ARRAY['english', 'german', 'french', 'spanish', 'italian', 'dutch', 'portuguese',
                                'swedish', 'danish', 'finnish', 'norwegian', 'russian'] LOOP
        -- ACCEPT = false: a word that is not a stop word goes on to the next dictionary.
        EXECUTE format('CREATE TEXT SEARCH DICTIONARY %I (TEMPLATE = simple, STOPWORDS = %s, ACCEPT = false)',
                       'sitetools_' || lang || '_stop', lang);
        EXECUTE format('ALTER TEXT SEARCH CONFIGURATION %I ALTER MAPPING FOR word, hword, hword_part WITH %I, unaccent, %I',
                       'sitetools_' || lang, 'sitetools_' || lang || '_stop', lang || '_stem');
    END LOOP;
END
$$;
-- +goose StatementEnd

-- The stored full-text vectors are computed anew (a generated column is, on update).
UPDATE chunks SET ts_config = ts_config WHERE ts_config::text <> 'sitetools_simple';

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
    lang text;
BEGIN
    FOREACH lang IN ARRAY ARRAY['english', 'german', 'french', 'spanish', 'italian', 'dutch', 'portuguese',
                                'swedish', 'danish', 'finnish', 'norwegian', 'russian'] LOOP
        EXECUTE format('ALTER TEXT SEARCH CONFIGURATION %I ALTER MAPPING FOR word, hword, hword_part WITH unaccent, %I',
                       'sitetools_' || lang, lang || '_stem');
        EXECUTE format('DROP TEXT SEARCH DICTIONARY %I', 'sitetools_' || lang || '_stop');
    END LOOP;
END
$$;
-- +goose StatementEnd
UPDATE chunks SET ts_config = ts_config WHERE ts_config::text <> 'sitetools_simple';
