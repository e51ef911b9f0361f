package sitesearch_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sitetools/sitetools/internal/content"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// vocabularyIndex is an index that records whether each page write kept the vocabulary.
type vocabularyIndex struct {
	sitesearch.Index
	mu    sync.Mutex
	flags []bool
}

func (x *vocabularyIndex) PutPage(ctx context.Context, m sitesearch.IndexModel, p sitesearch.PageRecord, chunks []sitesearch.ChunkRecord, vocabulary bool) error {
	x.mu.Lock()
	x.flags = append(x.flags, vocabulary)
	x.mu.Unlock()
	return x.Index.PutPage(ctx, m, p, chunks, vocabulary)
}

// written returns and forgets the flags of the writes so far.
func (x *vocabularyIndex) written() []bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	f := x.flags
	x.flags = nil
	return f
}

// ndoc is how many chunks the vocabulary says hold word; -1 when it does not have it.
func ndoc(t *testing.T, e *searchEnv, word string) int {
	t.Helper()
	var n int
	err := e.db.Pool.QueryRow(context.Background(), `SELECT ndoc FROM search_vocabulary WHERE word = $1`, word).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return -1
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPartialSyncKeepsTheVocabulary: a partial sync (a publish hook's) updates the words
// typo correction knows by the pages it writes and removes, without rebuilding them: a
// word only its new pages hold is there with the number of chunks that hold it and
// corrects a misspelling at once; it loses a chunk when a page no longer holds it, and
// is gone with the last page. A full sync writes its pages without the upkeep and
// rebuilds the vocabulary once at its end.
func TestPartialSyncKeepsTheVocabulary(t *testing.T) {
	e := newSearchEnv(t, envOptions{})
	ctx := context.Background()
	idx := &vocabularyIndex{Index: postgres.NewSiteIndex(e.db, 384)}
	// A word no chunk holds: only a rebuild removes it.
	if _, err := e.db.Pool.Exec(ctx, `INSERT INTO search_vocabulary (word, ndoc) VALUES ('sentinelword', 7)`); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, title, text string) {
		t.Helper()
		page := "---\ntitle: " + title + "\nlang: en\n---\n\n# " + title + "\n\n" + text + "\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("pterosaurs.md", "Pterosaurs", "The quetzalcoatlus was one of the largest animals that ever flew.")
	write("fossils.md", "Fossils", "Our fossil tours show a quetzalcoatlus wing bone from Texas.")
	partial := &sitesearch.Ingester{Index: idx, Embedder: e.embedder, Partial: true}
	st, err := partial.Sync(ctx, "dir:demo", sitesearch.DirWalk(dir, baseURL))
	if err != nil || st.Added != 2 {
		t.Fatalf("partial sync: %v %+v", err, st)
	}
	var holding int
	if err := e.db.Pool.QueryRow(ctx, `SELECT count(*) FROM chunks WHERE body ILIKE '%quetzalcoatlus%'`).Scan(&holding); err != nil {
		t.Fatal(err)
	}
	if n := ndoc(t, e, "quetzalcoatlus"); n != 2 || holding != 2 {
		t.Fatalf("quetzalcoatlus: ndoc %d, %d chunks hold it, want 2 and 2", n, holding)
	}
	if ndoc(t, e, "sentinelword") != 7 || !slices.Equal(idx.written(), []bool{true, true}) {
		t.Fatal("the partial sync rebuilt the vocabulary, or wrote a page without its upkeep")
	}
	r := e.search(t, "quetzalcoatlis wing")
	if r.out.Corrected["quetzalcoatlis"] != "quetzalcoatlus" || len(r.out.Results) == 0 {
		t.Fatalf("no correction to the new word: %s", r.body)
	}

	// The fossils page no longer holds the word: one chunk left.
	write("fossils.md", "Fossils", "Our fossil tours show a pteranodon wing bone from Kansas.")
	if st, err = partial.Sync(ctx, "dir:demo", sitesearch.DirWalk(dir, baseURL)); err != nil || st.Updated != 1 || !slices.Equal(idx.written(), []bool{true}) {
		t.Fatalf("partial sync after an edit: %v %+v", err, st)
	}
	if n := ndoc(t, e, "quetzalcoatlus"); n != 1 || ndoc(t, e, "pteranodon") != 1 || ndoc(t, e, "texas") != -1 {
		t.Fatalf("after the edit: quetzalcoatlus in %d chunks, pteranodon in %d, texas in %d", n, ndoc(t, e, "pteranodon"), ndoc(t, e, "texas"))
	}
	// The pterosaurs page answers 404: the word goes with it.
	gone := func(_ func(string) (sitesearch.PageState, bool), _ func(*content.Document) error) (sitesearch.WalkResult, error) {
		return sitesearch.WalkResult{Gone: []string{baseURL + "/pterosaurs"}}, nil
	}
	if st, err = partial.Sync(ctx, "dir:demo", gone); err != nil || st.Removed != 1 {
		t.Fatalf("partial sync of a page gone: %v %+v", err, st)
	}
	if n := ndoc(t, e, "quetzalcoatlus"); n != -1 || ndoc(t, e, "sentinelword") != 7 {
		t.Fatalf("after the removal: quetzalcoatlus in %d chunks, or the vocabulary was rebuilt", n)
	}
	if r := e.search(t, "quetzalcoatlis wing"); r.out.Corrected["quetzalcoatlis"] != "" {
		t.Fatalf("corrected to a word no page holds: %s", r.body)
	}

	// A full sync: the demo, and a page of its own.
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "gliders.md"), []byte("---\ntitle: Gliders\nlang: en\n---\n\n# Gliders\n\nA hatzegopteryx glided.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	full := &sitesearch.Ingester{Index: idx, Embedder: e.embedder}
	both := func(known func(string) (sitesearch.PageState, bool), fn func(*content.Document) error) (sitesearch.WalkResult, error) {
		if _, err := walkDemo(known, fn); err != nil {
			return sitesearch.WalkResult{}, err
		}
		return sitesearch.DirWalk(other, baseURL)(known, fn)
	}
	if st, err = full.Sync(ctx, "dir:demo", both); err != nil || st.Added != 1 || st.Removed != 1 {
		t.Fatalf("full sync: %v %+v", err, st)
	}
	if w := idx.written(); !slices.Equal(w, []bool{false}) || ndoc(t, e, "sentinelword") != -1 || ndoc(t, e, "hatzegopteryx") != 1 || ndoc(t, e, "pteranodon") != -1 {
		t.Fatalf("the full sync kept the vocabulary page by page (%v), or did not rebuild it", w)
	}
}
