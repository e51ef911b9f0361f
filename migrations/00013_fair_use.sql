-- +goose Up

-- Fair use: what one client may spend of each paid budget per UTC day. A client is a
-- keyed hash (HMAC-SHA-256, truncated to 16 bytes) of its rate-limit key (an address,
-- an IPv6 /64) under a secret that lives outside the database and changes every day:
-- nothing here names an address, and a row cannot be linked to the same client's row of
-- another day. Rows of days before today are dropped by the hourly prune.
--
-- spent counts the client's calls in flight at what they reserved, and settled calls at
-- what the provider counted; reached says the share refused a call today.
CREATE TABLE client_shares (
    day     date    NOT NULL,
    kind    text    NOT NULL CHECK (kind IN ('embedding', 'llm')),
    client  bytea   NOT NULL CHECK (length(client) = 16),
    spent   bigint  NOT NULL DEFAULT 0,
    reached boolean NOT NULL DEFAULT false,
    PRIMARY KEY (day, kind, client)
);

-- The owner's report counts fair-use events by day: shares reached, calls the paced
-- ceiling refused, proof-of-work outcomes (detail: share_reached/llm, paced/embedding,
-- pow/solved, pow/expired, ...).
ALTER TABLE activity_daily DROP CONSTRAINT activity_daily_event_check;
ALTER TABLE activity_daily ADD CONSTRAINT activity_daily_event_check
    CHECK (event IN ('search', 'search_no_result', 'answer', 'feedback',
                     'handover_offered', 'handover_called', 'fair_use'));

-- +goose Down
ALTER TABLE activity_daily DROP CONSTRAINT activity_daily_event_check;
ALTER TABLE activity_daily ADD CONSTRAINT activity_daily_event_check
    CHECK (event IN ('search', 'search_no_result', 'answer', 'feedback',
                     'handover_offered', 'handover_called'));
DROP TABLE client_shares;
