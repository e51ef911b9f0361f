-- +goose Up
CREATE EXTENSION IF NOT EXISTS vector;

-- One row per (tool, Idempotency-Key) of a call to a tool that is not read-only.
-- The key itself is not stored, only its hash; the result is what the caller got.
CREATE TABLE idempotency_keys (
    tool        text        NOT NULL,
    key_hash    bytea       NOT NULL,
    args_hash   bytea       NOT NULL,
    state       text        NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'done')),
    result      jsonb,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL DEFAULT now() + interval '24 hours',
    PRIMARY KEY (tool, key_hash)
);
CREATE INDEX idempotency_keys_expires_at ON idempotency_keys (expires_at);

-- +goose Down
DROP TABLE idempotency_keys;
