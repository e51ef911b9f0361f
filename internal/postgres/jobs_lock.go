package postgres

import (
	"context"
	"time"
)

// LockSync takes the sync lock, which one sync at a time holds on any replica (a full
// sync, or a publish hook's job), on a connection of its own, and returns the function
// that releases it. With wait false it returns ErrSyncBusy at once while another holds
// it; with wait true it tries every poll until it gets it or ctx ends, so that no
// connection is held while waiting. The lock goes with the session: a killed replica's
// is free once PostgreSQL sees its connection close.
func (s *IndexSyncs) LockSync(ctx context.Context, wait bool, poll time.Duration) (release func(), err error) {
	for {
		release, err := s.tryLock(ctx)
		if err != ErrSyncBusy || !wait {
			return release, err
		}
		select {
		case <-ctx.Done():
			return nil, Wrap("postgres.IndexSyncs.LockSync", ctx.Err())
		case <-time.After(poll):
		}
	}
}

func (s *IndexSyncs) tryLock(ctx context.Context) (func(), error) {
	conn, err := s.db.Pool.Acquire(ctx)
	if err != nil {
		return nil, Wrap("postgres.IndexSyncs.LockSync", err)
	}
	var got bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, syncLockKey).Scan(&got); err != nil {
		conn.Release()
		return nil, Wrap("postgres.IndexSyncs.LockSync", err)
	}
	if !got {
		conn.Release()
		return nil, ErrSyncBusy
	}
	return func() {
		// On a dead connection the lock went with the session.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, syncLockKey); err != nil {
			conn.Conn().Close(ctx)
		}
		conn.Release()
	}, nil
}
