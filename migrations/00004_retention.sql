-- +goose Up

-- When a cached query embedding was last used, so that retention removes the ones nobody
-- asks for any more (EMBEDDING_CACHE_TTL_DAYS) and caps the rest by recency
-- (EMBEDDING_CACHE_MAX_ROWS). A hit refreshes it at most once a day.
ALTER TABLE embedding_cache ADD COLUMN used_at timestamptz NOT NULL DEFAULT now();
UPDATE embedding_cache SET used_at = created_at;
CREATE INDEX embedding_cache_used_at ON embedding_cache (used_at);
DROP INDEX embedding_cache_created_at;

-- +goose Down
CREATE INDEX embedding_cache_created_at ON embedding_cache (created_at);
DROP INDEX embedding_cache_used_at;
ALTER TABLE embedding_cache DROP COLUMN used_at;
