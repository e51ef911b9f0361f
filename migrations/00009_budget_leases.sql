-- +goose Up

-- A replica's lease on a day's budget: the tokens it took from budgets.reserved to admit
-- calls without a round trip each (its calls in flight, settled spend not yet moved to
-- budgets.used, and about a second of its own demand). The replica renews expires_at
-- while it lives; any replica reclaims a lease past it, charging the whole of granted as
-- spent (the provider may have served the calls it held) with a ledger row whose outcome
-- is 'unknown'. budgets.reserved is the sum of granted over the day's leases.
CREATE TABLE budget_leases (
    id          bigserial   PRIMARY KEY,
    day         date        NOT NULL,
    kind        text        NOT NULL,
    holder      text        NOT NULL,          -- the replica: host name and process id
    granted     bigint      NOT NULL CHECK (granted >= 0),
    expires_at  timestamptz NOT NULL
);
CREATE INDEX budget_leases_expires_at ON budget_leases (expires_at);

-- A query embedding being fetched by one replica, so that the others wait for the shared
-- cache instead of paying for the same query (single-flight across replicas). Keyed as
-- embedding_cache is; the text is not kept. A claim past `until` is free again.
CREATE UNLOGGED TABLE embedding_claims (
    key    bytea       PRIMARY KEY,
    until  timestamptz NOT NULL
);

-- How many tokens a provider counts for each token of sitetools' own estimate, per kind
-- and model, as it last reported (ingest and served calls): reservations are sized by it
-- on every replica from its start, instead of the worst case assumed before any report.
CREATE TABLE provider_ratios (
    kind        text             NOT NULL,
    model       text             NOT NULL,
    ratio       double precision NOT NULL CHECK (ratio > 0),
    updated_at  timestamptz      NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, model)
);

COMMENT ON COLUMN ledger.outcome IS
    'ok; error (never reached the provider, or refused by it: not billed); unknown (may have reached it: timed out, reset, 5xx, a reclaimed lease; charged at its reservation); skipped (not made: the circuit was open)';

-- +goose Down
-- How many tokens a provider counts for each token of sitetools' own estimate, per kind
-- and model, as it last reported (ingest and served calls): reservations are sized by it
-- on every replica from its start, instead of the worst case assumed before any report.
CREATE TABLE provider_ratios (
    kind        text             NOT NULL,
    model       text             NOT NULL,
    ratio       double precision NOT NULL CHECK (ratio > 0),
    updated_at  timestamptz      NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, model)
);

COMMENT ON COLUMN ledger.outcome IS NULL;
DROP TABLE provider_ratios;
DROP TABLE embedding_claims;
DROP TABLE budget_leases;
