-- +goose Up

-- One rating per answer, on every replica: the first rating of an answer id is counted,
-- the same rating again counts nothing, and another one moves the answer's count in
-- activity_daily from the old rating to the new one. A row holds no answer id, only its
-- SHA-256 (the id is random and signed, so the hash cannot be reversed or guessed), the
-- UTC day the rating was first counted, and the activity_daily detail it is counted
-- under (kind/rating/reason). An id is refused 8 days after its own day, which is never
-- after the row's, so the prune drops rows older than that: nothing here outlives the
-- time its id can be used, and nothing in it names a visitor.
CREATE TABLE rated_answers (
    answer bytea NOT NULL PRIMARY KEY CHECK (length(answer) = 32),
    day    date  NOT NULL,
    detail text  NOT NULL CHECK (detail ~ '^[a-z_]{1,16}/[a-z_]{1,16}/[a-z_]{1,16}$')
);
CREATE INDEX rated_answers_day ON rated_answers (day);

-- +goose Down
DROP TABLE rated_answers;
