package postgres_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sitetools/sitetools/internal/insights"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
)

// TestPruneCountedHandovers: an answer's row (32 bytes) stays as long as its id may be
// taken, as a rated answer's does; a visitor's (16 bytes) only through its day, since the
// next day names the visitor under another key. Whatever the retention.
func TestPruneCountedHandovers(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	kept := int((insights.AnswerIDMaxAge + 24*time.Hour) / (24 * time.Hour))
	days := []int{0, 1, kept, kept + 1, 400}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO counted_handovers (key, day)
		SELECT substr(sha256(('answer' || d)::bytea), 1, n), (now() AT TIME ZONE 'UTC')::date - d
		FROM unnest($1::int[]) AS d, (VALUES (16), (32)) AS l(n)`, days); err != nil {
		t.Fatal(err)
	}
	got, err := db.Prune(ctx, postgres.Retention{}, false)
	if err != nil {
		t.Fatal(err)
	}
	// Visitors' rows of 4 past days, answers' of 2 days past the ids' life.
	if got != (postgres.Pruned{CountedHandovers: 6}) {
		t.Errorf("Prune = %+v; want 6 counted hand-overs", got)
	}
	rows, err := db.Pool.Query(ctx, `SELECT length(key) || ' ' || ((now() AT TIME ZONE 'UTC')::date - day)
		FROM counted_handovers ORDER BY length(key), day DESC`)
	if err != nil {
		t.Fatal(err)
	}
	left, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"16 0", "32 0", "32 1", "32 " + strconv.Itoa(kept)}; !slices.Equal(left, want) {
		t.Errorf("rows left (key length, days ago) %q; want %q", left, want)
	}
}
