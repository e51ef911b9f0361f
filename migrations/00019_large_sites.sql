-- +goose Up

-- When a page's stored copy was last fetched in full (a 200 with its body): a page whose
-- server answers 304, or whose sitemap <lastmod> does not move, for longer than
-- INGEST_MAX_AGE is fetched in full once. Pages stored before know no better than when
-- their text last changed.
ALTER TABLE pages ADD COLUMN fetched_at timestamptz;
UPDATE pages SET fetched_at = updated_at;
ALTER TABLE pages ALTER COLUMN fetched_at SET DEFAULT now(), ALTER COLUMN fetched_at SET NOT NULL;

-- How many pages the sitemap listed beyond INGEST_MAX_PAGES: a sync indexes the newest
-- and leaves these out (a count only, no URLs).
ALTER TABLE index_syncs ADD COLUMN left_out integer NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE index_syncs DROP COLUMN left_out;
ALTER TABLE pages DROP COLUMN fetched_at;
