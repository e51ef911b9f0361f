// Package postgres holds the connection pool, the schema migrations and the stores
// that keep sitetools' shared state in PostgreSQL.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	pgxvec "github.com/pgvector/pgvector-go/pgx"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/sitetools/sitetools/internal/postgres/pgerr"
	"github.com/sitetools/sitetools/migrations"
)

// DB is the connection pool plus what the service asks of the database itself.
type DB struct {
	Pool *pgxpool.Pool
}

// VectorSearch is how search walks the HNSW index, set on every connection of the pool
// (SEARCH_EF_SEARCH, SEARCH_ITERATIVE_SCAN); a zero field takes its default.
type VectorSearch struct {
	// EFSearch is hnsw.ef_search: how many candidates the walk through the graph keeps.
	// Search takes 40 candidates from the index, so below 40 fewer come back unless an
	// iterative scan goes on for them.
	EFSearch int
	// IterativeScan is hnsw.iterative_scan (pgvector 0.8): "off", "relaxed_order" or
	// "strict_order". On, a scan whose candidates a filter (language, path prefix) drops
	// goes on walking the graph until it has as many as were asked for, or until
	// hnsw.max_scan_tuples tuples were visited. With an older pgvector it is not set.
	IterativeScan string
}

// The defaults, chosen by the recall and latency measured on site-shaped vectors
// (docs/embeddings.md, "Vector search: ef_search and iterative scan").
const (
	DefaultEFSearch      = 100
	DefaultIterativeScan = "relaxed_order"
)

// IterativeScans are the values IterativeScan may take.
var IterativeScans = []string{"off", "relaxed_order", "strict_order"}

func (v VectorSearch) withDefaults() VectorSearch {
	if v.EFSearch == 0 {
		v.EFSearch = DefaultEFSearch
	}
	if v.IterativeScan == "" {
		v.IterativeScan = DefaultIterativeScan
	}
	return v
}

// An Option changes how Open sets up the pool's connections.
type Option func(*options)

type options struct{ search VectorSearch }

// WithVectorSearch sets how search walks the HNSW index (by default DefaultEFSearch and
// DefaultIterativeScan).
func WithVectorSearch(v VectorSearch) Option { return func(o *options) { o.search = v } }

// Open returns a pool for url. It does not connect: the service starts, and reports
// not ready, while the database is down, and recovers by itself when it returns.
func Open(ctx context.Context, url string, maxConns int32, opts ...Option) (*DB, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	search := o.search.withDefaults()
	if search.EFSearch < 1 || search.EFSearch > 1000 || !slices.Contains(IterativeScans, search.IterativeScan) {
		return nil, fmt.Errorf("postgres.Open: hnsw.ef_search %d (1 to 1000) or hnsw.iterative_scan %q (%s) out of range",
			search.EFSearch, search.IterativeScan, strings.Join(IterativeScans, ", "))
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres.Open: %w", err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	cfg.ConnConfig.ConnectTimeout = 3 * time.Second
	cfg.HealthCheckPeriod = 5 * time.Second
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error { return afterConnect(ctx, conn, search) }
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres.Open: %w", err)
	}
	return &DB{Pool: pool}, nil
}

// afterConnect registers pgvector's types and sets how search walks the HNSW index. The
// types exist only once the migrations created the extension; hnsw.iterative_scan only
// from pgvector 0.8 on.
func afterConnect(ctx context.Context, conn *pgx.Conn, search VectorSearch) error {
	var version *string
	if err := conn.QueryRow(ctx, `SELECT extversion FROM pg_extension WHERE extname = 'vector'`).Scan(&version); err != nil &&
		!errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	if version == nil {
		return nil
	}
	if err := pgxvec.RegisterTypes(ctx, conn); err != nil {
		return err
	}
	// The values are checked by Open: integers and one of IterativeScans.
	set := fmt.Sprintf("SET hnsw.ef_search = %d", search.EFSearch)
	if hasIterativeScan(*version) {
		set += "; SET hnsw.iterative_scan = " + search.IterativeScan
	}
	_, err := conn.Exec(ctx, set)
	return err
}

// hasIterativeScan reports whether pgvector of this extension version has
// hnsw.iterative_scan (0.8.0 and later).
func hasIterativeScan(version string) bool {
	major, rest, _ := strings.Cut(version, ".")
	minor, _, _ := strings.Cut(rest, ".")
	ma, err1 := strconv.Atoi(major)
	mi, err2 := strconv.Atoi(minor)
	return err1 == nil && err2 == nil && (ma > 0 || mi >= 8)
}

// Close closes the pool after every acquired connection is released.
func (db *DB) Close() { db.Pool.Close() }

func newProvider(url string) (*goose.Provider, *sql.DB, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, nil, err
	}
	sqldb := stdlib.OpenDB(*cfg)
	// An advisory lock: two `sitetools migrate` at once (two deploys, a Job retried)
	// take turns instead of colliding.
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 300))
	if err != nil {
		sqldb.Close()
		return nil, nil, err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, sqldb, migrations.FS, goose.WithSessionLocker(locker))
	if err != nil {
		sqldb.Close()
		return nil, nil, err
	}
	return p, sqldb, nil
}

// Migrate applies every pending migration and returns the resulting version.
func Migrate(ctx context.Context, url string) (int64, error) {
	p, sqldb, err := newProvider(url)
	if err != nil {
		return 0, fmt.Errorf("postgres.Migrate: %w", err)
	}
	defer sqldb.Close()
	if _, err := p.Up(ctx); err != nil {
		return 0, fmt.Errorf("postgres.Migrate: %w", err)
	}
	v, err := p.GetDBVersion(ctx)
	if err != nil {
		return 0, fmt.Errorf("postgres.Migrate: %w", err)
	}
	return v, nil
}

// latestVersion is the version of the newest embedded migration: the number its file
// name starts with.
var latestVersion = func() int64 {
	entries, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		panic(err)
	}
	var latest int64
	for _, name := range entries {
		digits, _, _ := strings.Cut(name, "_")
		v, err := strconv.ParseInt(digits, 10, 64)
		if err != nil {
			panic(fmt.Sprintf("migration %s: name must start with its version", name))
		}
		latest = max(latest, v)
	}
	return latest
}()

// LatestVersion is the schema version this build expects.
func LatestVersion() int64 { return latestVersion }

// SchemaVersion returns the version the database is at, from goose's table.
func (db *DB) SchemaVersion(ctx context.Context) (int64, error) {
	var v int64
	err := db.Pool.QueryRow(ctx, `SELECT COALESCE(max(version_id), 0) FROM goose_db_version WHERE is_applied`).Scan(&v)
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42P01" { // undefined_table: never migrated
			return 0, nil
		}
		return 0, Wrap("postgres.SchemaVersion", err)
	}
	return v, nil
}

// Ready reports whether the database is reachable and its schema current.
func (db *DB) Ready(ctx context.Context) error {
	v, err := db.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	// A newer schema is fine: migrations are forward-only and additive, so the previous
	// version keeps serving while a rolling upgrade replaces it.
	if v < latestVersion {
		return &SchemaOutdatedError{Have: v, Want: latestVersion}
	}
	return nil
}

// SchemaOutdatedError reports a database whose schema is not the one this build needs.
type SchemaOutdatedError struct{ Have, Want int64 }

func (e *SchemaOutdatedError) Error() string {
	return fmt.Sprintf("database schema at version %d, this build needs %d: run sitetools migrate", e.Have, e.Want)
}

// Wrap turns an error that means "the database cannot be reached" into a
// tools.Unavailable error, and wraps anything else with op; see pgerr.Wrap.
func Wrap(op string, err error) error { return pgerr.Wrap(op, err) }

// IsUnavailable reports whether err means the database is down or unreachable; see
// pgerr.IsUnavailable.
func IsUnavailable(err error) bool { return pgerr.IsUnavailable(err) }
