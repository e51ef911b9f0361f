package postgres_test

import (
	"context"
	"testing"

	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
)

// Client shares last one day: the prune drops every row before today (UTC), whatever
// the ledger's retention, and keeps today's.
func TestPruneDropsYesterdaysShares(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	if _, err := db.Pool.Exec(ctx, `INSERT INTO client_shares (day, kind, client, spent) VALUES
		((now() AT TIME ZONE 'UTC')::date - 1, 'llm', '\x000102030405060708090a0b0c0d0e0f', 10),
		((now() AT TIME ZONE 'UTC')::date - 30, 'embedding', '\x000102030405060708090a0b0c0d0e0f', 10),
		((now() AT TIME ZONE 'UTC')::date, 'llm', '\x000102030405060708090a0b0c0d0e0f', 10)`); err != nil {
		t.Fatal(err)
	}
	got, err := db.Prune(ctx, postgres.Retention{}, false)
	if err != nil {
		t.Fatal(err)
	}
	var left int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM client_shares WHERE day = (now() AT TIME ZONE 'UTC')::date`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if got.ClientShares != 2 || left != 1 {
		t.Fatalf("pruned %d share rows, %d of today left; want 2 and 1", got.ClientShares, left)
	}
}
