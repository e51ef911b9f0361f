-- +goose Up

-- The task prefixes the index's vectors were made with (e.g. "search_document: " before
-- every chunk of nomic-embed-text): queries must be embedded with the matching query
-- prefix, so changing either needs a re-index, as a model change does. An index built
-- before prefixes existed was built without them.
ALTER TABLE index_meta
    ADD COLUMN query_prefix    text NOT NULL DEFAULT '',
    ADD COLUMN document_prefix text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE index_meta DROP COLUMN query_prefix, DROP COLUMN document_prefix;
