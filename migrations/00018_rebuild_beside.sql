-- +goose Up

-- A model, dimension or prefix change builds the new vectors beside the live ones, and
-- search answers from the live ones until the switch:
--
-- * chunks.embedding_next holds each chunk's vector of the model being built (NULL: not
--   yet, or no rebuild under way); its HNSW index is built once every chunk has one.
-- * index_rebuild records what is being built (one row at most).
-- * The switch, one transaction, makes embedding_next the embedding, its HNSW index the
--   live one, records the model and moves index_meta.generation on: a search whose
--   query vector was made for the generation before runs again with the new model.
ALTER TABLE chunks ADD COLUMN embedding_next vector;
ALTER TABLE index_meta ADD COLUMN generation bigint NOT NULL DEFAULT 1;

CREATE TABLE index_rebuild (
    singleton        boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    model            text        NOT NULL,
    dimensions       integer     NOT NULL CHECK (dimensions > 0),
    query_prefix     text        NOT NULL DEFAULT '',
    document_prefix  text        NOT NULL DEFAULT '',
    started_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE index_rebuild;
ALTER TABLE index_meta DROP COLUMN generation;
ALTER TABLE chunks DROP COLUMN embedding_next;
