-- +goose Up

-- One count per hand-over, on every replica: POST /api/handover counts a filled contact
-- form only when it inserts the hand-over's key here (ON CONFLICT DO NOTHING). The key is
-- the SHA-256 of the chat answer id the hand-over follows (32 bytes: the id is random and
-- signed, so the hash cannot be reversed or guessed), or, without an id, the visitor's
-- name of the day (16 bytes: an HMAC of the rate limit's key under a key derived from
-- the day and a secret that is not in this database, internal/clientkey), so that a
-- dump cannot be matched against addresses. The key alone is unique: an answer id counts
-- once whatever the day it is replayed on, and a visitor's name changes with the day by
-- itself. day is the UTC day the row was counted; the prune drops a visitor's row once
-- its day is over and an answer's row once its id is refused (8 days), so nothing here
-- outlives the time it can match.
CREATE TABLE counted_handovers (
    key bytea NOT NULL PRIMARY KEY CHECK (length(key) IN (16, 32)),
    day date  NOT NULL
);
CREATE INDEX counted_handovers_day ON counted_handovers (day);

-- +goose Down
DROP TABLE counted_handovers;
