package postgres

import (
	"context"
	"time"
)

// InstanceKey returns the key of instance_keys named name, which a migration generated
// once for every replica to share.
func (db *DB) InstanceKey(ctx context.Context, name string) ([]byte, error) {
	var key []byte
	if err := db.Pool.QueryRow(ctx, `SELECT key FROM instance_keys WHERE name = $1`, name).Scan(&key); err != nil {
		return nil, Wrap("postgres.InstanceKey", err)
	}
	return key, nil
}

// SpendChallenge records that a proof-of-work challenge (its 32 bytes) was solved and
// used, until it expires; false if it was used before, on any replica. The hourly prune
// deletes it after expires.
func (db *DB) SpendChallenge(ctx context.Context, challenge []byte, expires time.Time) (bool, error) {
	tag, err := db.Pool.Exec(ctx, `INSERT INTO spent_challenges (challenge, expires_at) VALUES ($1, $2)
		ON CONFLICT (challenge) DO NOTHING`, challenge, expires)
	if err != nil {
		return false, Wrap("postgres.SpendChallenge", err)
	}
	return tag.RowsAffected() == 1, nil
}
