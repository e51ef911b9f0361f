// Package postgres holds the connection pool, the schema migrations and the stores
// that keep sitetools' shared state in PostgreSQL.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
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

// Open returns a pool for url. It does not connect: the service starts, and reports
// not ready, while the database is down, and recovers by itself when it returns.
func Open(ctx context.Context, url string, maxConns int32) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres.Open: %w", err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	cfg.ConnConfig.ConnectTimeout = 3 * time.Second
	cfg.HealthCheckPeriod = 5 * time.Second
	// pgvector's types exist only once the migrations created the extension.
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		var ok bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_type WHERE typname = 'vector')").Scan(&ok); err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if err := pgxvec.RegisterTypes(ctx, conn); err != nil {
			return err
		}
		// Search takes 40 candidates from the vector index; the HNSW scan must look at
		// more than that to find them (pgvector's default is 40).
		_, err := conn.Exec(ctx, "SET hnsw.ef_search = 100")
		return err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres.Open: %w", err)
	}
	return &DB{Pool: pool}, nil
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
