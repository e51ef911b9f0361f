-- +goose Up

-- Which embedding model and dimension produced every vector in chunks. One row: an
-- index is never a mix of models.
CREATE TABLE index_meta (
    singleton   boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    model       text        NOT NULL,
    dimensions  integer     NOT NULL CHECK (dimensions > 0),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE pages (
    id            bigserial   PRIMARY KEY,
    url           text        NOT NULL UNIQUE,
    path          text        NOT NULL,
    title         text        NOT NULL,
    lang          text        NOT NULL DEFAULT '',
    body          text        NOT NULL,          -- the indexed text, served by get_page
    content_hash  text        NOT NULL,
    source        text        NOT NULL,          -- the ingest source, so pages gone from it can be removed
    updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX pages_path ON pages (path text_pattern_ops);
CREATE INDEX pages_source ON pages (source);

CREATE TABLE chunks (
    id            bigserial PRIMARY KEY,
    page_id       bigint    NOT NULL REFERENCES pages (id) ON DELETE CASCADE,
    ord           integer   NOT NULL,
    heading       text      NOT NULL DEFAULT '',
    anchor        text      NOT NULL DEFAULT '',
    body          text      NOT NULL,
    content_hash  text      NOT NULL,
    -- The text search configuration of the page's language ('simple' when unknown).
    ts_config     regconfig NOT NULL DEFAULT 'simple',
    -- Title and heading weigh more than body text.
    context       text      NOT NULL DEFAULT '',
    tsv           tsvector  GENERATED ALWAYS AS (
                      setweight(to_tsvector(ts_config, context), 'A') ||
                      setweight(to_tsvector(ts_config, body), 'B')) STORED,
    -- Untyped so that the dimension is the configured one; the HNSW index is created
    -- per dimension on a cast, e.g. (embedding::vector(384)).
    embedding     vector    NOT NULL,
    UNIQUE (page_id, ord)
);
CREATE INDEX chunks_tsv ON chunks USING gin (tsv);
CREATE INDEX chunks_content_hash ON chunks (content_hash);

-- Daily token budgets, reserved before a provider call and reconciled after it.
CREATE TABLE budgets (
    day       date   NOT NULL,
    kind      text   NOT NULL,                  -- 'embedding' | 'llm'
    reserved  bigint NOT NULL DEFAULT 0 CHECK (reserved >= 0),
    used      bigint NOT NULL DEFAULT 0 CHECK (used >= 0),
    PRIMARY KEY (day, kind)
);

-- One row per provider call (and per shared-cache hit). Never the text of a query.
CREATE TABLE ledger (
    id          bigserial     PRIMARY KEY,
    at          timestamptz   NOT NULL DEFAULT now(),
    kind        text          NOT NULL,         -- 'embedding' | 'llm'
    channel     text          NOT NULL,
    tool        text          NOT NULL,
    model       text          NOT NULL,
    tokens      integer       NOT NULL,
    cost_usd    numeric(14,8) NOT NULL DEFAULT 0,
    cache_hit   boolean       NOT NULL,
    outcome     text          NOT NULL          -- 'ok' | 'error'
);
CREATE INDEX ledger_at ON ledger (at);

-- Query embeddings keyed by SHA-256 of model and normalised query; the text is not kept.
CREATE TABLE embedding_cache (
    key         bytea       PRIMARY KEY,
    model       text        NOT NULL,
    embedding   vector      NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX embedding_cache_created_at ON embedding_cache (created_at);

-- +goose Down
DROP TABLE embedding_cache;
DROP TABLE ledger;
DROP TABLE budgets;
DROP TABLE chunks;
DROP TABLE pages;
DROP TABLE index_meta;
