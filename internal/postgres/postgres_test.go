package postgres_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
)

func TestPgvectorAndSchema(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	var version string
	if err := db.Pool.QueryRow(ctx, `SELECT extversion FROM pg_extension WHERE extname = 'vector'`).Scan(&version); err != nil {
		t.Fatalf("pgvector is not installed: %v", err)
	}
	if version == "" {
		t.Fatal("empty pgvector version")
	}
	t.Logf("pgvector %s", version)
	// The vector type is registered on the pool's connections: a round trip works.
	var dist float64
	if err := db.Pool.QueryRow(ctx, `SELECT '[1,0,0]'::vector <=> '[0,1,0]'::vector`).Scan(&dist); err != nil || dist != 1 {
		t.Fatalf("cosine distance = %v, %v; want 1", dist, err)
	}
	v, err := db.SchemaVersion(ctx)
	if err != nil || v != postgres.LatestVersion() {
		t.Fatalf("schema version %d (%v), want %d", v, err, postgres.LatestVersion())
	}
	if err := db.Ready(ctx); err != nil {
		t.Fatalf("Ready: %v", err)
	}
}

func TestMigrateIsIdempotentAndReadyNeedsIt(t *testing.T) {
	url := pgtest.NewURL(t)
	ctx := context.Background()
	v, err := postgres.Migrate(ctx, url)
	if err != nil || v != postgres.LatestVersion() {
		t.Fatalf("Migrate on a migrated database: %d, %v", v, err)
	}
	db, err := postgres.Open(ctx, url, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// A newer schema (the next release migrated first, during a rolling upgrade) is ready.
	if _, err := db.Pool.Exec(ctx, `INSERT INTO goose_db_version (version_id, is_applied) VALUES ($1, true)`, postgres.LatestVersion()+1); err != nil {
		t.Fatal(err)
	}
	if err := db.Ready(ctx); err != nil {
		t.Fatalf("Ready with a newer schema: %v", err)
	}
	if _, err := db.Pool.Exec(ctx, `DELETE FROM goose_db_version WHERE version_id > 0`); err != nil {
		t.Fatal(err)
	}
	if err := db.Ready(ctx); err == nil {
		t.Fatal("Ready with an unmigrated schema")
	}
}

func TestConcurrentMigrationsTakeTurns(t *testing.T) {
	// A fresh, empty database: both runs race to migrate it.
	url := pgtest.NewEmptyURL(t)
	const runs = 8
	errs := make(chan error, runs)
	for range runs {
		go func() {
			_, err := postgres.Migrate(context.Background(), url)
			errs <- err
		}()
	}
	for range runs {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent migrate: %v", err)
		}
	}
}

func TestUnreachableDatabaseIsUnavailable(t *testing.T) {
	db, err := postgres.Open(context.Background(), "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Ready(context.Background())
	if err == nil || !postgres.IsUnavailable(err) {
		t.Fatalf("Ready = %v, want an unavailable error", err)
	}
}

// TestStopWordsWithAccents: each language's configuration drops its stop words as
// written, accents and all, and still removes accents from the words it keeps.
func TestStopWordsWithAccents(t *testing.T) {
	db := pgtest.NewDB(t)
	for _, tc := range []struct{ config, text, want string }{
		{"sitetools_german", "für über können während Größe", "'gross':5"},
		{"sitetools_french", "à été même café", "'caf':4"},
		{"sitetools_english", "the café", "'cafe':2"},
	} {
		var got string
		if err := db.Pool.QueryRow(context.Background(), `SELECT to_tsvector($1::regconfig, $2)::text`, tc.config, tc.text).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("to_tsvector(%s, %q) = %s, want %s", tc.config, tc.text, got, tc.want)
		}
	}
}

// TestOpenSetsVectorSearch: every connection of the pool searches the HNSW index with the
// ef_search and iterative scan asked for, or with the defaults.
func TestOpenSetsVectorSearch(t *testing.T) {
	url := pgtest.NewURL(t)
	ctx := context.Background()
	for _, c := range []struct {
		opts      []postgres.Option
		ef        string
		iterative string
	}{
		{nil, strconv.Itoa(postgres.DefaultEFSearch), postgres.DefaultIterativeScan},
		{[]postgres.Option{postgres.WithVectorSearch(postgres.VectorSearch{EFSearch: 60, IterativeScan: "strict_order"})}, "60", "strict_order"},
		{[]postgres.Option{postgres.WithVectorSearch(postgres.VectorSearch{EFSearch: 400})}, "400", postgres.DefaultIterativeScan},
	} {
		db, err := postgres.Open(ctx, url, 1, c.opts...)
		if err != nil {
			t.Fatal(err)
		}
		var ef, iterative string
		// The settings are pgvector's once its library is loaded in the session.
		err = db.Pool.QueryRow(ctx, `SELECT ('[1,0]'::vector <=> '[0,1]'::vector)::text, current_setting('hnsw.ef_search'),
			current_setting('hnsw.iterative_scan')`).Scan(new(string), &ef, &iterative)
		db.Close()
		if err != nil || ef != c.ef || iterative != c.iterative {
			t.Errorf("hnsw.ef_search %q, hnsw.iterative_scan %q (%v); want %q, %q", ef, iterative, err, c.ef, c.iterative)
		}
	}
	if _, err := postgres.Open(ctx, url, 1, postgres.WithVectorSearch(postgres.VectorSearch{EFSearch: 1001})); err == nil {
		t.Error("Open took hnsw.ef_search 1001")
	}
	if _, err := postgres.Open(ctx, url, 1, postgres.WithVectorSearch(postgres.VectorSearch{IterativeScan: "on"})); err == nil {
		t.Error("Open took hnsw.iterative_scan on")
	}
}
