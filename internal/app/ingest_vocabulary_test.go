package app_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// TestPublishHookKeepsTheVocabulary: the publish hook's ingest of one URL (a partial
// sync) adds the words of a new page to those typo correction knows, and a page that
// then answers 404 takes them away, with no rebuild of the vocabulary either time.
func TestPublishHookKeepsTheVocabulary(t *testing.T) {
	e := newIngestEnv(t, "/a", "/b")
	ctx := context.Background()
	e.ingest(t, nil)
	// A word no chunk holds: only a rebuild removes it.
	if _, err := e.db.Pool.Exec(ctx, `INSERT INTO search_vocabulary (word, ndoc) VALUES ('sentinelword', 7)`); err != nil {
		t.Fatal(err)
	}
	ndoc := func(word string) int {
		t.Helper()
		var n int
		err := e.db.Pool.QueryRow(ctx, `SELECT ndoc FROM search_vocabulary WHERE word = $1`, word).Scan(&n)
		if errors.Is(err, pgx.ErrNoRows) {
			return -1
		}
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	corrections := func() []string {
		t.Helper()
		cands, err := postgres.NewSiteIndex(e.db, 384).Candidates(ctx, []string{"quetzalcoatlis"})
		if err != nil {
			t.Fatal(err)
		}
		var words []string
		for _, c := range cands["quetzalcoatlis"] {
			words = append(words, c.Word)
		}
		return words
	}
	page := e.site.srv.URL + "/c"
	e.site.set(func() { e.site.pages["/c"] = "A quetzalcoatlus flew over the page /c." })
	if st := e.ingest(t, []string{page}); st.Added != 1 {
		t.Fatalf("hook for a new page: %+v", st)
	}
	if n := ndoc("quetzalcoatlus"); n != 1 || ndoc("sentinelword") != 7 {
		t.Fatalf("after the new page: quetzalcoatlus in %d chunks, or the vocabulary was rebuilt", n)
	}
	if words := corrections(); !slices.Contains(words, "quetzalcoatlus") {
		t.Fatalf("candidates for quetzalcoatlis: %v", words)
	}
	e.site.set(func() { delete(e.site.pages, "/c") })
	if st := e.ingest(t, []string{page}); st.Removed != 1 {
		t.Fatalf("hook for a page that answers 404: %+v", st)
	}
	if n := ndoc("quetzalcoatlus"); n != -1 || ndoc("sentinelword") != 7 {
		t.Fatalf("after the 404: quetzalcoatlus in %d chunks, or the vocabulary was rebuilt", n)
	}
	if words := corrections(); slices.Contains(words, "quetzalcoatlus") {
		t.Fatalf("candidates for quetzalcoatlis after the 404: %v", words)
	}
	hits, err := postgres.NewSiteIndex(e.db, 384).Search(ctx, sitesearch.Query{Text: "quetzalcoatlus", Limit: 5})
	if err != nil || len(hits) != 0 {
		t.Fatalf("the removed page is still found: %+v %v", hits, err)
	}
}
