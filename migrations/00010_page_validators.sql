-- +goose Up

-- What an ingest over a sitemap needs to re-crawl a page cheaply: the validators of the
-- response its stored copy came from (ETag and Last-Modified, as the server sent them,
-- for If-None-Match and If-Modified-Since), and the sitemap's <lastmod> it was listed
-- with (a page whose <lastmod> has not moved since is not fetched at all). NULL: not
-- known (a page from a directory, a server that sends none).
ALTER TABLE pages
    ADD COLUMN etag          text,
    ADD COLUMN last_modified text,
    ADD COLUMN lastmod       timestamptz;

-- +goose Down
ALTER TABLE pages
    DROP COLUMN lastmod,
    DROP COLUMN last_modified,
    DROP COLUMN etag;
