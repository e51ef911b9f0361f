package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// vocabularyWords are what the random pages are written in: words the vocabulary keeps
// (some in other cases, with accents, hyphenated), and some it leaves out (too short,
// with digits, too long).
var vocabularyWords = []string{
	"harbour", "lantern", "meadow", "quarry", "saffron", "thistle", "walnut", "zeppelin", "ember", "fjord",
	"Harbour", "MEADOW", "café", "Büro", "naïve", "well-known", "e-mail", "über", "cafe",
	"ox", "a", "at", "abc1", "2024", "x86", strings.Repeat("long", 11),
}

// randomChunks are 0 to 4 chunks of random words, some of them repeated within a chunk.
func randomChunks(rng *rand.Rand) []sitesearch.ChunkRecord {
	text := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = vocabularyWords[rng.IntN(len(vocabularyWords))]
		}
		return strings.Join(w, " ")
	}
	chunks := make([]sitesearch.ChunkRecord, rng.IntN(5))
	for i := range chunks {
		chunks[i] = sitesearch.ChunkRecord{Ord: i, Text: text(1 + rng.IntN(8)), Context: text(rng.IntN(3)),
			Hash: fmt.Sprint(rng.Uint64()), TSConfig: "sitetools_english", Vector: []float32{1, 0, 0}}
	}
	return chunks
}

// vocabularyRows returns the vocabulary, word by word.
func vocabularyRows(t *testing.T, db *postgres.DB) map[string]int {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), `SELECT word, ndoc FROM search_vocabulary`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var w string
		var n int
		if err := rows.Scan(&w, &n); err != nil {
			t.Fatal(err)
		}
		out[w] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestVocabularyKeptPageByPage: after random page writes and removals, several at once
// and on the same pages, each keeping the vocabulary in its own transaction, and rebuilds
// beside them, the vocabulary is the one a rebuild from every chunk makes; no write
// failed (a deadlock would fail one), and a write without upkeep leaves the vocabulary
// alone.
func TestVocabularyKeptPageByPage(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	idx := postgres.NewSiteIndex(db, 3)
	model := sitesearch.IndexModel{Name: "test", Dimensions: 3}
	urls := make([]string, 12)
	for i := range urls {
		urls[i] = fmt.Sprintf("https://example.org/p%d", i)
	}
	put := func(rng *rand.Rand) error {
		u := urls[rng.IntN(len(urls))]
		p := sitesearch.PageRecord{URL: u, Path: u[len("https://example.org"):], Title: "t", Lang: "en", Hash: "h", Source: "test"}
		return idx.PutPage(ctx, model, p, randomChunks(rng), true)
	}
	remove := func(rng *rand.Rand) error {
		gone := make([]string, 1+rng.IntN(3))
		for i := range gone {
			gone[i] = urls[rng.IntN(len(urls))]
		}
		_, err := idx.RemovePages(ctx, gone)
		return err
	}
	rebuilt := func() map[string]int {
		t.Helper()
		if err := idx.RebuildVocabulary(ctx); err != nil {
			t.Fatal(err)
		}
		return vocabularyRows(t, db)
	}
	for round := range 4 {
		var wg sync.WaitGroup
		errs := make(chan error, 4*30+3)
		for w := range 4 {
			rng := rand.New(rand.NewPCG(uint64(round), uint64(w)))
			wg.Go(func() {
				for range 30 {
					op := put
					if rng.IntN(4) == 0 {
						op = remove
					}
					errs <- op(rng)
				}
			})
		}
		// A rebuild beside the writes (a full sync's, of another replica) counts each
		// page's words once, whether the page was written before it or after.
		wg.Go(func() {
			for range 3 {
				errs <- idx.RebuildVocabulary(ctx)
			}
		})
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		kept := vocabularyRows(t, db)
		if round == 0 && len(kept) < 5 {
			t.Fatalf("round 0: only %v in the vocabulary", kept)
		}
		if diff := cmp.Diff(rebuilt(), kept); diff != "" {
			t.Fatalf("round %d: the vocabulary kept page by page differs from a rebuild (-rebuilt +kept):\n%s", round, diff)
		}
	}
	// Without upkeep, a write leaves the vocabulary as it was.
	before := vocabularyRows(t, db)
	p := sitesearch.PageRecord{URL: urls[0], Path: "/p0", Title: "t", Lang: "en", Hash: "h2", Source: "test"}
	chunks := []sitesearch.ChunkRecord{{Text: "gondola gondola", Hash: "g", TSConfig: "sitetools_english", Vector: []float32{0, 1, 0}}}
	if err := idx.PutPage(ctx, model, p, chunks, false); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, vocabularyRows(t, db)); diff != "" {
		t.Fatalf("a write without upkeep changed the vocabulary:\n%s", diff)
	}
	if got := rebuilt()["gondola"]; got != 1 {
		t.Fatalf("after a rebuild, gondola is in %d chunks, want 1", got)
	}
}
