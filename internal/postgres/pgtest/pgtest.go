// Package pgtest gives each test its own PostgreSQL database, cloned from a template
// database that is migrated once per schema version.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sitetools/sitetools/internal/postgres"
)

// AdminURL returns TEST_DATABASE_URL, failing the test when it is not set: tests of
// anything that stores run against a real PostgreSQL (make test provides one).
func AdminURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("TEST_DATABASE_URL")
	if u == "" {
		t.Fatal("TEST_DATABASE_URL is not set: run the tests with `make test`, which starts PostgreSQL with pgvector")
	}
	return u
}

// NewURL creates a fresh, migrated database for this test and returns its URL. The
// database is dropped when the test ends.
func NewURL(t testing.TB) string {
	t.Helper()
	admin := AdminURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	template, err := ensureTemplate(ctx, admin)
	if err != nil {
		t.Fatalf("pgtest: template database: %v", err)
	}
	name := "t_" + randomHex(8)
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(ctx)
	// Concurrent clones of one template can collide briefly; retry.
	for attempt := 0; ; attempt++ {
		_, err = conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", name, template))
		if err == nil || attempt == 20 {
			break
		}
		time.Sleep(time.Duration(50*(attempt+1)) * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Logf("pgtest: drop %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", name)); err != nil {
			t.Logf("pgtest: drop %s: %v", name, err)
		}
	})
	return withDatabase(t, admin, name)
}

// NewEmptyURL creates an empty database (not migrated) for this test and returns its URL.
func NewEmptyURL(t testing.TB) string {
	t.Helper()
	admin := AdminURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer conn.Close(ctx)
	name := "t_" + randomHex(8)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, admin); err == nil {
			defer c.Close(ctx)
			_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		}
	})
	return withDatabase(t, admin, name)
}

// NewDB is NewURL plus an open pool, closed when the test ends.
func NewDB(t testing.TB) *postgres.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), NewURL(t), 8)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

// ensureTemplate creates and migrates the template database for this schema version,
// once across all test processes (an advisory lock serialises them).
func ensureTemplate(ctx context.Context, admin string) (string, error) {
	name := fmt.Sprintf("sitetools_template_v%d", postgres.LatestVersion())
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(74657374)"); err != nil {
		return "", err
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(74657374)")
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate)", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", name)); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s", name)); err != nil {
		var pgErr *pgconn.PgError
		if !(asPgErr(err, &pgErr) && pgErr.Code == "42P04") {
			return "", err
		}
	}
	u, err := replaceDatabase(admin, name)
	if err != nil {
		return "", err
	}
	if _, err := postgres.Migrate(ctx, u); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s WITH is_template true ALLOW_CONNECTIONS false", name)); err != nil {
		return "", err
	}
	return name, nil
}

func asPgErr(err error, target **pgconn.PgError) bool {
	e, ok := err.(*pgconn.PgError)
	if ok {
		*target = e
	}
	return ok
}

func withDatabase(t testing.TB, admin, name string) string {
	t.Helper()
	u, err := replaceDatabase(admin, name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func replaceDatabase(admin, name string) (string, error) {
	u, err := url.Parse(admin)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("TEST_DATABASE_URL must be a postgres:// URL")
	}
	u.Path = "/" + strings.TrimPrefix(name, "/")
	return u.String(), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
