package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sitetools/sitetools/tools"
)

// IdempotencyStore remembers the results of calls to tools that are not read-only,
// per (tool, Idempotency-Key), so that a repeated call returns the stored result instead
// of acting twice. It lives in PostgreSQL so that it holds across replicas and restarts.
type IdempotencyStore struct {
	db *DB
	// TTL is how long a key is remembered; StaleAfter is when a key whose call never
	// finished (a crashed replica) may be claimed again.
	TTL        time.Duration
	StaleAfter time.Duration
}

// NewIdempotencyStore returns a store keeping keys for 24 hours.
func NewIdempotencyStore(db *DB) *IdempotencyStore {
	return &IdempotencyStore{db: db, TTL: 24 * time.Hour, StaleAfter: 5 * time.Minute}
}

// Interceptor runs a non-read-only tool at most once per Idempotency-Key: the first call
// claims the key, runs, and stores its result; a repeat with the same arguments gets the
// stored result; other arguments, or a repeat while the first still runs, get
// idempotency_conflict. A call without a key is refused with idempotency_key_required.
func (s *IdempotencyStore) Interceptor(ctx context.Context, call *tools.Call, next tools.Invoker) (*tools.Result, error) {
	if call.Tool.Annotations.ReadOnly {
		return next(ctx, call)
	}
	key := call.Request.IdempotencyKey
	if key == "" {
		return nil, tools.Errorf(tools.CodeIdempotencyKeyRequired,
			"%s changes state: send an Idempotency-Key header (a unique value per intended action) so that a retry cannot act twice", call.Tool.Name)
	}
	if len(key) > 255 {
		return nil, tools.Errorf(tools.CodeMalformedRequest, "the Idempotency-Key header must be at most 255 characters")
	}
	// The key is the caller's: scoped by the channel and the client (its rate-limit key),
	// so that nobody else can use up, replay or block it. Only the hash is stored.
	keyHash := sha256.Sum256([]byte(string(call.Request.Channel) + "\x00" + call.Request.Client + "\x00" + key))
	argsHash := sha256.Sum256(call.Arguments)

	claimed, stored, err := s.claim(ctx, call.Tool.Name, keyHash[:], argsHash[:])
	if err != nil {
		return nil, err
	}
	if !claimed {
		return stored, nil
	}
	res, callErr := next(ctx, call)
	// The outcome is recorded even if the caller went away meanwhile.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if callErr != nil {
		// Nothing was done that the caller was told about: let a retry run again.
		if _, err := s.db.Pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE tool = $1 AND key_hash = $2 AND state = 'pending'`,
			call.Tool.Name, keyHash[:]); err != nil {
			return nil, errors.Join(callErr, Wrap("postgres.IdempotencyStore.release", err))
		}
		return nil, callErr
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("postgres.IdempotencyStore: %w", err)
	}
	if _, err := s.db.Pool.Exec(ctx, `UPDATE idempotency_keys SET state = 'done', result = $3 WHERE tool = $1 AND key_hash = $2`,
		call.Tool.Name, keyHash[:], b); err != nil {
		return nil, Wrap("postgres.IdempotencyStore.complete", err)
	}
	return res, nil
}

// claim inserts the key as pending. If it exists it returns the stored result, or an
// idempotency_conflict error.
func (s *IdempotencyStore) claim(ctx context.Context, tool string, keyHash, argsHash []byte) (bool, *tools.Result, error) {
	tx, err := s.db.Pool.Begin(ctx)
	if err != nil {
		return false, nil, Wrap("postgres.IdempotencyStore.claim", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// Forget keys that expired, or whose call never finished, before claiming.
	if _, err := tx.Exec(ctx, `DELETE FROM idempotency_keys WHERE tool = $1 AND key_hash = $2
		AND (expires_at < now() OR (state = 'pending' AND created_at < now() - $3::interval))`,
		tool, keyHash, s.StaleAfter.String()); err != nil {
		return false, nil, Wrap("postgres.IdempotencyStore.claim", err)
	}
	tag, err := tx.Exec(ctx, `INSERT INTO idempotency_keys (tool, key_hash, args_hash, expires_at)
		VALUES ($1, $2, $3, now() + $4::interval) ON CONFLICT DO NOTHING`,
		tool, keyHash, argsHash, s.TTL.String())
	if err != nil {
		return false, nil, Wrap("postgres.IdempotencyStore.claim", err)
	}
	if tag.RowsAffected() == 1 {
		if err := tx.Commit(ctx); err != nil {
			return false, nil, Wrap("postgres.IdempotencyStore.claim", err)
		}
		return true, nil, nil
	}
	var (
		storedArgs []byte
		state      string
		result     []byte
	)
	err = tx.QueryRow(ctx, `SELECT args_hash, state, result FROM idempotency_keys WHERE tool = $1 AND key_hash = $2`,
		tool, keyHash).Scan(&storedArgs, &state, &result)
	if errors.Is(err, pgx.ErrNoRows) {
		// Released between our insert and select: the caller may simply retry.
		return false, nil, tools.Errorf(tools.CodeIdempotencyConflict, "a request with this Idempotency-Key just finished without a result; retry it")
	}
	if err != nil {
		return false, nil, Wrap("postgres.IdempotencyStore.claim", err)
	}
	if string(storedArgs) != string(argsHash) {
		return false, nil, tools.Errorf(tools.CodeIdempotencyConflict, "this Idempotency-Key was already used with other arguments; use a new key for a new action")
	}
	if state != "done" {
		return false, nil, &tools.Error{Code: tools.CodeIdempotencyConflict, Message: "a request with this Idempotency-Key is still in progress; retry shortly", RetryAfter: time.Second}
	}
	var res tools.Result
	if err := json.Unmarshal(result, &res); err != nil {
		return false, nil, fmt.Errorf("postgres.IdempotencyStore: stored result: %w", err)
	}
	return false, &res, nil
}
