-- +goose Up

-- The optional proof of work before a chat turn (CHAT_PROOF_OF_WORK, ALTCHA protocol).
-- 'proof_of_work' signs the challenges, so that any replica verifies a challenge another
-- issued.
INSERT INTO instance_keys (name, key)
VALUES ('proof_of_work', decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'))
ON CONFLICT (name) DO NOTHING;

-- Challenges whose solution was used: each is good for one chat turn on any replica. A
-- row is the challenge (itself a SHA-256 of a random salt and number: it names no
-- visitor) and the challenge's expiry, after which it is refused anyway; the hourly
-- prune deletes expired rows.
CREATE TABLE spent_challenges (
    challenge  bytea       PRIMARY KEY CHECK (length(challenge) = 32),
    expires_at timestamptz NOT NULL
);
CREATE INDEX spent_challenges_expires_at ON spent_challenges (expires_at);

-- +goose Down
DROP TABLE spent_challenges;
DELETE FROM instance_keys WHERE name = 'proof_of_work';
