package postgres

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sitetools/sitetools/tools"
)

// IndexSync is one sync of the index with the site, a row of index_syncs: a full sync of
// the sitemap on serve's timer (trigger "interval") or a publish hook's job (trigger
// "hook": some URLs, or the whole site).
type IndexSync struct {
	ID      string
	Trigger string // "interval" | "hook"
	State   string // "queued" | "running" | "done" | "failed"
	Outcome string // "ok" | "partial" (some pages failed and were kept) | "failed"; "" until finished
	All     bool   // the whole sitemap; else URLs only
	URLs    []string
	Holder  string // the replica that runs it
	Created time.Time
	// Started and Finished are nil until then.
	Started, Finished *time.Time
	Pages             SyncPages
	BytesFetched      int64
	Error             string
}

// SyncPages counts what a sync did to the pages.
type SyncPages struct {
	Added       int `json:"added"`
	Updated     int `json:"updated"`
	Unchanged   int `json:"unchanged"`
	NotModified int `json:"notModified"` // answered 304 to a conditional request
	Skipped     int `json:"skipped"`     // not fetched: the sitemap's lastmod was not newer
	Removed     int `json:"removed"`
	Failed      int `json:"failed"`
	// LeftOut counts the pages the sitemap listed beyond INGEST_MAX_PAGES: not indexed
	// (the newest were), and removed if they were.
	LeftOut int `json:"leftOut"`
}

// SyncRequest is a publish hook's request: the whole site, or URLs (normalised and
// sorted by the caller), with its Idempotency-Key (may be empty) and the hash of the
// request it came with.
type SyncRequest struct {
	All            bool
	URLs           []string
	IdempotencyKey string
	RequestHash    []byte
}

// The lifetimes of index_syncs rows.
const (
	// SyncHeartbeat is how often a replica renews the heartbeat of its queued and running
	// rows, and sweeps; SyncStaleAfter is when a row whose heartbeat stopped (a killed
	// replica) is taken over: a publish hook's job is queued again on the replica that
	// sweeps, a full sync on the timer is failed (the timer runs the next). So a stopped
	// replica's job is taken over within SyncTakeoverBound.
	SyncHeartbeat     = 15 * time.Second
	SyncStaleAfter    = 4 * SyncHeartbeat
	SyncTakeoverBound = SyncStaleAfter + SyncHeartbeat
	// syncMaxAttempts is how many runs of a hook's job may stop their replica before it
	// is failed rather than taken over again.
	syncMaxAttempts = 3
	// syncKeepDays is how long finished rows are kept.
	syncKeepDays = 90
)

// ErrSyncBusy is returned by IndexSyncs.Lock without waiting while another sync holds
// the lock.
var ErrSyncBusy = errors.New("another sync holds the lock")

// syncLockKey is the advisory lock one sync at a time holds, full or hook, on any
// replica; submitLockKey serialises the publish hook's submissions, so that concurrent
// hooks for the same pages coalesce.
const (
	syncLockKey   int64 = 0x7369_7465_7379_6e63 // "sitesync"
	submitLockKey int64 = 0x7369_7465_7375_626d // "sitesubm"
)

// IndexSyncs keeps index_syncs for one replica (its holder name).
type IndexSyncs struct {
	db     *DB
	holder string
	// TookOver, if set, is told how many jobs of stopped replicas this one just queued on
	// itself, for its worker to wake.
	TookOver func(n int)
}

// NewIndexSyncs returns the syncs of this process, named by host name, process id and a
// random instance id: a process restarted with the same host name and pid (PID 1 in a
// container) is another holder, and takes over the rows of the one before.
func NewIndexSyncs(db *DB) *IndexSyncs {
	host, _ := os.Hostname()
	var id [4]byte
	_, _ = rand.Read(id[:])
	return &IndexSyncs{db: db, holder: fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(id[:]))}
}

// Holder is the name this replica's rows carry.
func (s *IndexSyncs) Holder() string { return s.holder }

const syncColumns = `id::text, trigger, state, coalesce(outcome, ''), all_pages, urls, holder, created_at, started_at, finished_at,
	added, updated, unchanged, not_modified, skipped, removed, failed, left_out, bytes_fetched, coalesce(error, '')`

func scanSync(row pgx.Row) (IndexSync, error) {
	var j IndexSync
	p := &j.Pages
	err := row.Scan(&j.ID, &j.Trigger, &j.State, &j.Outcome, &j.All, &j.URLs, &j.Holder, &j.Created, &j.Started, &j.Finished,
		&p.Added, &p.Updated, &p.Unchanged, &p.NotModified, &p.Skipped, &p.Removed, &p.Failed, &p.LeftOut, &j.BytesFetched, &j.Error)
	return j, err
}

// takeOverStale is the statement that takes over the rows whose replica stopped renewing
// them ($1 the staleness, $2 the new holder, $3 syncMaxAttempts, $4 one id or NULL for
// all): a publish hook's job is queued again on this replica unless its runs stopped
// their replica $3 times already; the rest are failed. It returns the ids taken over.
const takeOverStale = `UPDATE index_syncs SET
	state = CASE WHEN trigger = 'hook' AND attempts < $3 THEN 'queued' ELSE 'failed' END,
	holder = CASE WHEN trigger = 'hook' AND attempts < $3 THEN $2 ELSE holder END,
	outcome = CASE WHEN trigger = 'hook' AND attempts < $3 THEN NULL ELSE 'failed' END,
	finished_at = CASE WHEN trigger = 'hook' AND attempts < $3 THEN NULL ELSE now() END,
	error = CASE WHEN trigger = 'hook' AND attempts < $3 THEN NULL
		WHEN trigger = 'hook' THEN 'the replicas running it stopped ' || attempts || ' times'
		ELSE 'the replica running it stopped' END,
	started_at = NULL, heartbeat_at = now()
	WHERE state IN ('queued', 'running') AND heartbeat_at < now() - $1::interval AND ($4::uuid IS NULL OR id = $4::uuid)
	RETURNING id::text, state`

// takeOver runs takeOverStale on q (the pool or a transaction) for one id, or all rows
// with id "", and wakes this replica's worker if it took a job.
func (s *IndexSyncs) takeOver(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, id string) error {
	var one *string
	if id != "" {
		one = &id
	}
	rows, err := q.Query(ctx, takeOverStale, SyncStaleAfter.String(), s.holder, syncMaxAttempts, one)
	if err != nil {
		return err
	}
	var jobID, state string
	taken := 0
	_, err = pgx.ForEachRow(rows, []any{&jobID, &state}, func() error {
		if state == "queued" {
			taken++
		}
		return nil
	})
	if taken > 0 && s.TookOver != nil {
		s.TookOver(taken)
	}
	return err
}

// Submit queues a publish hook's job on this replica. A repeat of an Idempotency-Key
// with the same request returns its job; with another request it is an
// idempotency_conflict. A queued job that covers the request (the whole site, or all of
// its URLs) is returned instead of a new one, with coalesced true.
func (s *IndexSyncs) Submit(ctx context.Context, r SyncRequest) (job IndexSync, coalesced bool, err error) {
	if len(r.IdempotencyKey) > 255 {
		return job, false, tools.Errorf(tools.CodeMalformedRequest, "the Idempotency-Key header must be at most 255 characters")
	}
	tx, err := s.db.Pool.Begin(ctx)
	if err != nil {
		return job, false, Wrap("postgres.IndexSyncs.Submit", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, submitLockKey); err != nil {
		return job, false, Wrap("postgres.IndexSyncs.Submit", err)
	}
	if err := s.takeOver(ctx, tx, ""); err != nil {
		return job, false, Wrap("postgres.IndexSyncs.Submit", err)
	}
	if r.IdempotencyKey != "" {
		var hash []byte
		job, err = scanSyncWith(tx.QueryRow(ctx, `SELECT k.request_hash, `+syncColumns+` FROM index_sync_keys k
			JOIN index_syncs ON index_syncs.id = k.sync_id WHERE k.key = $1`, r.IdempotencyKey), &hash)
		switch {
		case err == nil && !bytes.Equal(hash, r.RequestHash):
			return job, false, tools.Errorf(tools.CodeIdempotencyConflict, "this Idempotency-Key was already used with another request; use a new key for a new request")
		case err == nil:
			return job, false, nil
		case !errors.Is(err, pgx.ErrNoRows):
			return job, false, Wrap("postgres.IndexSyncs.Submit", err)
		}
	}
	job, coalesced, err = s.queue(ctx, tx, r)
	if err != nil {
		return job, false, err
	}
	if r.IdempotencyKey != "" {
		if _, err := tx.Exec(ctx, `INSERT INTO index_sync_keys (key, request_hash, sync_id) VALUES ($1, $2, $3)`,
			r.IdempotencyKey, r.RequestHash, job.ID); err != nil {
			return job, false, Wrap("postgres.IndexSyncs.Submit", err)
		}
	}
	return job, coalesced, Wrap("postgres.IndexSyncs.Submit", tx.Commit(ctx))
}

// queue returns the queued job that covers r, or queues a new one on this replica.
func (s *IndexSyncs) queue(ctx context.Context, tx pgx.Tx, r SyncRequest) (job IndexSync, coalesced bool, err error) {
	urls := r.URLs
	if urls == nil {
		urls = []string{}
	}
	job, err = scanSync(tx.QueryRow(ctx, `SELECT `+syncColumns+` FROM index_syncs
		WHERE state = 'queued' AND trigger = 'hook' AND (all_pages OR (NOT $1 AND urls @> $2::text[]))
		ORDER BY created_at LIMIT 1`, r.All, urls))
	if err == nil {
		return job, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return job, false, Wrap("postgres.IndexSyncs.Submit", err)
	}
	job, err = scanSync(tx.QueryRow(ctx, `INSERT INTO index_syncs (trigger, state, all_pages, urls, holder)
		VALUES ('hook', 'queued', $1, $2, $3) RETURNING `+syncColumns, r.All, urls, s.holder))
	return job, false, Wrap("postgres.IndexSyncs.Submit", err)
}

func scanSyncWith(row pgx.Row, hash *[]byte) (IndexSync, error) {
	var j IndexSync
	p := &j.Pages
	err := row.Scan(hash, &j.ID, &j.Trigger, &j.State, &j.Outcome, &j.All, &j.URLs, &j.Holder, &j.Created, &j.Started, &j.Finished,
		&p.Added, &p.Updated, &p.Unchanged, &p.NotModified, &p.Skipped, &p.Removed, &p.Failed, &p.LeftOut, &j.BytesFetched, &j.Error)
	return j, err
}

// uuidShape is the text form of a UUID, checked before a look-up.
var uuidShape = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// Get returns the sync id; one whose replica stopped renewing it is taken over first. An
// unknown id is a not_found error.
func (s *IndexSyncs) Get(ctx context.Context, id string) (IndexSync, error) {
	if !uuidShape.MatchString(id) {
		return IndexSync{}, tools.Errorf(tools.CodeNotFound, "no reindex job has this id")
	}
	if err := s.takeOver(ctx, s.db.Pool, id); err != nil {
		return IndexSync{}, Wrap("postgres.IndexSyncs.Get", err)
	}
	j, err := scanSync(s.db.Pool.QueryRow(ctx, `SELECT `+syncColumns+` FROM index_syncs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return j, tools.Errorf(tools.CodeNotFound, "no reindex job has this id")
	}
	return j, Wrap("postgres.IndexSyncs.Get", err)
}

// NextQueued returns this replica's oldest queued job, or ok false.
func (s *IndexSyncs) NextQueued(ctx context.Context) (job IndexSync, ok bool, err error) {
	job, err = scanSync(s.db.Pool.QueryRow(ctx, `SELECT `+syncColumns+` FROM index_syncs
		WHERE holder = $1 AND state = 'queued' ORDER BY created_at LIMIT 1`, s.holder))
	if errors.Is(err, pgx.ErrNoRows) {
		return job, false, nil
	}
	return job, err == nil, Wrap("postgres.IndexSyncs.NextQueued", err)
}

// StartInterval records a full sync on the timer as running on this replica and returns
// its id.
func (s *IndexSyncs) StartInterval(ctx context.Context) (string, error) {
	var id string
	err := s.db.Pool.QueryRow(ctx, `INSERT INTO index_syncs (trigger, state, all_pages, holder, started_at)
		VALUES ('interval', 'running', true, $1, now()) RETURNING id::text`, s.holder).Scan(&id)
	return id, Wrap("postgres.IndexSyncs.StartInterval", err)
}

// Start marks a queued job as running.
func (s *IndexSyncs) Start(ctx context.Context, id string) error {
	tag, err := s.db.Pool.Exec(ctx, `UPDATE index_syncs SET state = 'running', started_at = now(), heartbeat_at = now(),
		attempts = attempts + 1 WHERE id = $1 AND state = 'queued' AND holder = $2`, id, s.holder)
	if err == nil && tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres.IndexSyncs.Start: job %s is no longer queued", id)
	}
	return Wrap("postgres.IndexSyncs.Start", err)
}

// Finish records how a sync ended: outcome ok, partial or failed, what it did to the
// pages, the bytes it fetched, and why it failed (empty: it did not).
func (s *IndexSyncs) Finish(ctx context.Context, id, outcome string, p SyncPages, bytesFetched int64, reason string) error {
	state := "done"
	if outcome == "failed" {
		state = "failed"
	}
	var errText *string
	if reason != "" {
		errText = &reason
	}
	_, err := s.db.Pool.Exec(ctx, `UPDATE index_syncs SET state = $2, outcome = $3, finished_at = now(), heartbeat_at = now(),
		added = $4, updated = $5, unchanged = $6, not_modified = $7, skipped = $8, removed = $9, failed = $10,
		bytes_fetched = $11, error = $12, left_out = $13 WHERE id = $1`,
		id, state, outcome, p.Added, p.Updated, p.Unchanged, p.NotModified, p.Skipped, p.Removed, p.Failed, bytesFetched, errText, p.LeftOut)
	return Wrap("postgres.IndexSyncs.Finish", err)
}

// Heartbeat renews this replica's queued and running rows.
func (s *IndexSyncs) Heartbeat(ctx context.Context) error {
	_, err := s.db.Pool.Exec(ctx, `UPDATE index_syncs SET heartbeat_at = now() WHERE holder = $1 AND state IN ('queued', 'running')`, s.holder)
	return Wrap("postgres.IndexSyncs.Heartbeat", err)
}

// Sweep takes over the rows of replicas that stopped renewing them and deletes rows
// finished more than syncKeepDays ago.
func (s *IndexSyncs) Sweep(ctx context.Context) error {
	if err := s.takeOver(ctx, s.db.Pool, ""); err != nil {
		return Wrap("postgres.IndexSyncs.Sweep", err)
	}
	_, err := s.db.Pool.Exec(ctx, `DELETE FROM index_syncs WHERE finished_at < now() - make_interval(days => $1)`, syncKeepDays)
	return Wrap("postgres.IndexSyncs.Sweep", err)
}

// LastFullSync returns when the last successful full sync (outcome ok or partial, on
// the timer or a hook's for the whole site) finished and how long ago by the database's
// clock, or ok false if none did.
func LastFullSync(ctx context.Context, db *DB) (at time.Time, age time.Duration, ok bool, err error) {
	var t *time.Time
	var seconds *float64
	err = db.Pool.QueryRow(ctx, `SELECT max(finished_at), extract(epoch FROM now() - max(finished_at))::float8
		FROM index_syncs WHERE all_pages AND outcome IN ('ok', 'partial')`).Scan(&t, &seconds)
	if err != nil || t == nil || seconds == nil {
		return time.Time{}, 0, false, Wrap("postgres.LastFullSync", err)
	}
	return *t, time.Duration(*seconds * float64(time.Second)), true, nil
}

// LastFullSyncLeftOut returns how many pages the last successful full sync left out
// (SyncPages.LeftOut), 0 if none finished.
func LastFullSyncLeftOut(ctx context.Context, db *DB) (int, error) {
	var n int
	err := db.Pool.QueryRow(ctx, `SELECT coalesce((SELECT left_out FROM index_syncs
		WHERE all_pages AND outcome IN ('ok', 'partial') ORDER BY finished_at DESC LIMIT 1), 0)`).Scan(&n)
	return n, Wrap("postgres.LastFullSyncLeftOut", err)
}

// LastSync returns the sync that finished last, of any trigger, or nil if none did.
func LastSync(ctx context.Context, db *DB) (*IndexSync, error) {
	j, err := scanSync(db.Pool.QueryRow(ctx, `SELECT `+syncColumns+` FROM index_syncs
		WHERE finished_at IS NOT NULL ORDER BY finished_at DESC LIMIT 1`))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, Wrap("postgres.LastSync", err)
	}
	return &j, nil
}

// IndexWriteAge returns how long ago the last page was written to the index, by the
// database's clock; 0 for an empty index.
func IndexWriteAge(ctx context.Context, db *DB) (time.Duration, error) {
	var seconds float64
	err := db.Pool.QueryRow(ctx, `SELECT coalesce(extract(epoch FROM now() - max(updated_at))::float8, 0) FROM pages`).Scan(&seconds)
	return time.Duration(seconds * float64(time.Second)), Wrap("postgres.IndexWriteAge", err)
}
