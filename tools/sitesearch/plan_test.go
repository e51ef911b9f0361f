package sitesearch_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// TestSearchPlans: on a pool of one connection, searches without a language or a path
// prefix, with and without a query vector, run on their statement's generic plan (made
// once, never a plan per question), answer as the statement planned for its arguments
// answers on this small site, and leave the connection's plan_cache_mode as it was; a
// search with a language is planned for its arguments and leaves no cached statement.
func TestSearchPlans(t *testing.T) {
	e := newSearchEnv(t, envOptions{local: true})
	ctx := context.Background()
	db, err := postgres.Open(ctx, e.db.Pool.Config().ConnString(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	index := postgres.NewSiteIndex(db, 384)
	questions := []string{"how much does an accessibility audit cost", "who founded the company",
		"wie teuer ist ein Audit", "screen reader testing", "book a call next week", "cloud costs"}
	for i, q := range questions {
		query := sitesearch.Query{Text: q, Limit: 5}
		if i%2 == 0 { // every other one full-text only, as when the provider is down
			out, err := e.embedder.Embed(ctx, []string{q})
			if err != nil {
				t.Fatal(err)
			}
			query.Vector = out.Vectors[0]
		}
		got, err := index.Search(ctx, query)
		if err != nil || len(got) == 0 {
			t.Fatalf("search %q: %d hits, %v", q, len(got), err)
		}
		if want := planned(t, db, query); urls(got) != urls(want) {
			t.Errorf("search %q on the generic plan: %s\nplanned for its arguments: %s", q, urls(got), urls(want))
		}
	}
	var generic, custom int64
	if err := db.Pool.QueryRow(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1`,
		postgres.SearchSQL(384, false)).Scan(&generic, &custom); err != nil {
		t.Fatalf("the search statement is not prepared on the connection: %v", err)
	}
	t.Logf("%d searches: the statement ran %d times on its generic plan, %d on a plan of its own", len(questions), generic, custom)
	if generic != int64(len(questions)) || custom != 0 {
		t.Errorf("the statement ran %d times on its generic plan and %d on a plan of its own, want %d and 0", generic, custom, len(questions))
	}
	var mode string
	if err := db.Pool.QueryRow(ctx, `SHOW plan_cache_mode`).Scan(&mode); err != nil || mode != "auto" {
		t.Errorf("after the searches the connection's plan_cache_mode is %q (%v), want auto as before", mode, err)
	}
	hits, err := index.Search(ctx, sitesearch.Query{Text: "Kontakt Büro", Lang: "de", Limit: 3})
	if err != nil || len(hits) == 0 {
		t.Fatalf("search in German: %d hits, %v", len(hits), err)
	}
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements WHERE statement = $1`,
		postgres.SearchSQL(384, true)).Scan(&n); err != nil || n != 0 {
		t.Errorf("the filtered statement is cached on the connection (%d, %v): it must be planned for its arguments", n, err)
	}
}

// planned runs the search's statement for a filtered search, planned for q's arguments
// (an unnamed statement), with no filter.
func planned(t *testing.T, db *postgres.DB, q sitesearch.Query) []sitesearch.Hit {
	t.Helper()
	var vec any
	if q.Vector != nil {
		vec = pgvector.NewVector(q.Vector)
	}
	rows, err := db.Pool.Query(context.Background(), postgres.SearchSQL(384, true), pgx.QueryExecModeExec,
		q.Text, vec, q.Limit, "", "", []string{}, []string{}, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var hits []sitesearch.Hit
	for rows.Next() {
		var h sitesearch.Hit
		var generation int64
		if err := rows.Scan(&h.Title, &h.URL, &h.Anchor, &h.Snippet, &h.Score, &h.Matched, &h.Distance, &h.Coverage, &generation); err != nil {
			t.Fatal(err)
		}
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return hits
}

// urls lists the hits' URLs, best first.
func urls(hits []sitesearch.Hit) string {
	u := make([]string, len(hits))
	for i, h := range hits {
		u[i] = h.URL
	}
	return strings.Join(u, " ")
}
