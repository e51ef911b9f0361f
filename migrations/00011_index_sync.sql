-- +goose Up

-- One row per sync of the index with the site: a full sync of the sitemap on serve's
-- timer (trigger 'interval') or a publish hook's job (trigger 'hook': some URLs, or the
-- whole site). A hook's job is queued on the replica that accepted it (holder) and runs
-- there; every replica renews heartbeat_at of its queued and running rows, and a row
-- whose heartbeat stopped (a killed replica) is failed by the next read or sweep. The
-- URLs are the site's own pages; no query text is kept.
CREATE TABLE index_syncs (
    id               uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    trigger          text        NOT NULL CHECK (trigger IN ('interval', 'hook')),
    state            text        NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed')),
    outcome          text        CHECK (outcome IN ('ok', 'partial', 'failed')),
    all_pages        boolean     NOT NULL,
    urls             text[]      NOT NULL DEFAULT '{}',
    holder           text        NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    started_at       timestamptz,
    finished_at      timestamptz,
    heartbeat_at     timestamptz NOT NULL DEFAULT now(),
    added            integer     NOT NULL DEFAULT 0,
    updated          integer     NOT NULL DEFAULT 0,
    unchanged        integer     NOT NULL DEFAULT 0,
    not_modified     integer     NOT NULL DEFAULT 0,
    skipped          integer     NOT NULL DEFAULT 0,
    removed          integer     NOT NULL DEFAULT 0,
    failed           integer     NOT NULL DEFAULT 0,
    bytes_fetched    bigint      NOT NULL DEFAULT 0,
    error            text
);
CREATE INDEX index_syncs_active ON index_syncs (state, created_at) WHERE state IN ('queued', 'running');
CREATE INDEX index_syncs_finished ON index_syncs (finished_at) WHERE finished_at IS NOT NULL;

-- A publish hook's Idempotency-Key, the hash of its request and the job that answered it
-- (its own, or the queued one it was coalesced into): a repeat gets the same job.
CREATE TABLE index_sync_keys (
    key           text  PRIMARY KEY,
    request_hash  bytea NOT NULL,
    sync_id       uuid  NOT NULL REFERENCES index_syncs (id) ON DELETE CASCADE
);

-- +goose Down
DROP TABLE index_sync_keys;
DROP TABLE index_syncs;
