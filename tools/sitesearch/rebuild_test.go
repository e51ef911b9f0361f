package sitesearch_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/insights"
	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// stopsAfter is an embedder that fails once it has made calls calls: a rebuild stopped
// part way (a crash, a deploy).
type stopsAfter struct {
	llm.Embedder
	calls int
}

func (s *stopsAfter) Embed(ctx context.Context, texts []string) (*llm.Embeddings, error) {
	if s.calls == 0 {
		return nil, errors.New("stopped")
	}
	s.calls--
	return s.Embedder.Embed(ctx, texts)
}

// modelOn is an embedder of model and dims on a fake provider of its own.
func modelOn(t *testing.T, model string, dims int) (*llmtest.Server, llm.Embedder) {
	t.Helper()
	fake := llmtest.NewServer(t, dims)
	e, err := llm.NewOpenAI(llm.OpenAIOptions{BaseURL: fake.BaseURL(), Model: model, Dimensions: dims, Timeout: 2 * time.Second, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return fake, e
}

type indexState struct {
	model         string
	dims          int
	generation    int64
	built, total  int // chunks with a vector of the rebuild, all chunks
	hnsw          []string
	liveDimsWrong int // chunks whose live vector is not of dims
}

func stateOf(t *testing.T, db *postgres.DB) indexState {
	t.Helper()
	var s indexState
	err := db.Pool.QueryRow(context.Background(), `SELECT model, dimensions, generation,
		(SELECT count(*) FROM chunks WHERE embedding_next IS NOT NULL), (SELECT count(*) FROM chunks),
		(SELECT coalesce(array_agg(indexname ORDER BY indexname), '{}') FROM pg_indexes WHERE tablename = 'chunks' AND indexname LIKE '%hnsw%'),
		(SELECT count(*) FROM chunks WHERE vector_dims(embedding) <> index_meta.dimensions)
		FROM index_meta`).Scan(&s.model, &s.dims, &s.generation, &s.built, &s.total, &s.hnsw, &s.liveDimsWrong)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// searchWith searches db's index with a query vector of e for generation gen.
func searchWith(t *testing.T, index *postgres.SiteIndex, e llm.Embedder, gen int64) ([]sitesearch.Hit, error) {
	t.Helper()
	out, err := e.Embed(context.Background(), []string{"booking an appointment"})
	if err != nil {
		t.Fatal(err)
	}
	return index.Search(context.Background(), sitesearch.Query{Text: "booking an appointment", Vector: out.Vectors[0], Generation: gen, Limit: 5})
}

// A rebuild for another model and dimension that stops part way leaves the live index
// as it was and searchable; run again, it resumes where it stopped (embedding only the
// chunks left), switches in one step, and a query vector of the model before is then
// told that the index switched rather than compared with vectors it cannot be.
func TestRebuildResumesAndSwitches(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	_, before := fakeEmbedder(t)
	live := postgres.NewSiteIndex(db, 384)
	if _, err := (&sitesearch.Ingester{Index: live, Embedder: before, BatchSize: 10}).Sync(ctx, "dir:demo", walkDemo); err != nil {
		t.Fatal(err)
	}
	fake, after := modelOn(t, "fake-after", 256)
	in := &sitesearch.Ingester{Index: postgres.NewSiteIndex(db, 256), Embedder: &stopsAfter{after, 10}, BatchSize: 4, Reindex: true}
	if _, err := in.Sync(ctx, "dir:demo", walkDemo); err == nil {
		t.Fatal("a rebuild whose embedder stopped succeeded")
	}
	s := stateOf(t, db)
	if s.model != "fake-embed" || s.dims != 384 || s.generation != 1 || s.built == 0 || s.built >= s.total || s.liveDimsWrong != 0 {
		t.Fatalf("after a stopped rebuild: %+v; want the live index of fake-embed as it was, and some of the new vectors beside it", s)
	}
	if hits, err := searchWith(t, live, before, 1); err != nil || len(hits) == 0 {
		t.Fatalf("the live index during the rebuild: %d hits, %v", len(hits), err)
	}
	checkCandidate(t, live, after)
	if r, err := insights.Read(ctx, db.Pool, 1); err != nil || r.Index.Rebuild == nil || r.Index.Rebuild.Model != "fake-after" ||
		r.Index.Rebuild.Done != int64(s.built) || r.Index.Rebuild.Total != int64(s.total) {
		t.Errorf("the owner's report during the rebuild: %+v, %v", r.Index.Rebuild, err)
	}

	builtBefore, requests := s.built, len(fake.Requests())
	in.Embedder = after
	st, err := in.Sync(ctx, "dir:demo", walkDemo)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Rebuild.Resumed || !st.Rebuild.Switched || st.Rebuild.Done != s.total {
		t.Errorf("resumed rebuild: %+v", st.Rebuild)
	}
	if embedded := st.ChunksEmbedded; embedded > s.total-builtBefore {
		t.Errorf("the resumed rebuild embedded %d chunks; %d were left", embedded, s.total-builtBefore)
	}
	s = stateOf(t, db)
	if s.model != "fake-after" || s.dims != 256 || s.generation != 2 || s.built != 0 || s.liveDimsWrong != 0 ||
		len(s.hnsw) != 1 || s.hnsw[0] != "chunks_embedding_hnsw_256" {
		t.Fatalf("after the switch: %+v", s)
	}
	t.Logf("%d chunks; %d made before the stop, the rest in %d requests after", s.total, builtBefore, len(fake.Requests())-requests)
	if r, err := insights.Read(ctx, db.Pool, 1); err != nil || r.Index.Rebuild != nil {
		t.Errorf("the owner's report after the switch: rebuild %+v, %v; want none", r.Index.Rebuild, err)
	}
	if _, err := searchWith(t, live, before, 1); !errors.Is(err, sitesearch.ErrIndexSwitched) {
		t.Errorf("a query vector of the model before: %v; want ErrIndexSwitched", err)
	}
	if hits, err := searchWith(t, live, after, 2); err != nil || len(hits) == 0 {
		t.Errorf("a query vector of the new model: %d hits, %v", len(hits), err)
	}
}

// A rebuild for one model, stopped, then asked for another, starts over: nothing of the
// first model's vectors reaches the index.
func TestRebuildForAnotherModelStartsOver(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	_, before := fakeEmbedder(t)
	if _, err := (&sitesearch.Ingester{Index: postgres.NewSiteIndex(db, 384), Embedder: before}).Sync(ctx, "dir:demo", walkDemo); err != nil {
		t.Fatal(err)
	}
	_, first := modelOn(t, "fake-first", 128)
	in := &sitesearch.Ingester{Index: postgres.NewSiteIndex(db, 128), Embedder: &stopsAfter{first, 10}, BatchSize: 4, Reindex: true}
	if _, err := in.Sync(ctx, "dir:demo", walkDemo); err == nil {
		t.Fatal("a rebuild whose embedder stopped succeeded")
	}
	_, second := modelOn(t, "fake-second", 64)
	st, err := (&sitesearch.Ingester{Index: postgres.NewSiteIndex(db, 64), Embedder: second, BatchSize: 8, Reindex: true}).Sync(ctx, "dir:demo", walkDemo)
	if err != nil {
		t.Fatal(err)
	}
	s := stateOf(t, db)
	if st.Rebuild.Resumed || s.model != "fake-second" || s.dims != 64 || s.liveDimsWrong != 0 || s.generation != 2 {
		t.Fatalf("rebuild %+v; index %+v", st.Rebuild, s)
	}
}

// checkCandidate searches the vectors a stopped rebuild made so far, with a query vector
// of its model: its vector half finds chunks, as the live index's does with its own.
func checkCandidate(t *testing.T, live *postgres.SiteIndex, after llm.Embedder) {
	t.Helper()
	c, m, ok, err := live.Candidate(context.Background())
	if err != nil || !ok || m.Name != "fake-after" || m.Dimensions != 256 {
		t.Fatalf("candidate: %+v, %v, %v", m, ok, err)
	}
	if got, gen, ok, err := c.Live(context.Background()); err != nil || !ok || got != m || gen != 0 {
		t.Errorf("the candidate's model: %+v generation %d; want the rebuild's, of none", got, gen)
	}
	hits, err := searchWith(t, c, after, 0)
	if err != nil || len(hits) == 0 {
		t.Fatalf("candidate search: %d hits, %v", len(hits), err)
	}
	byVector := 0
	for _, h := range hits {
		if slices.Contains(h.Matched, "vector") {
			byVector++
		}
	}
	if byVector == 0 {
		t.Errorf("no hit of the candidate search came from its vectors: %+v", hits)
	}
}

// A rebuild held before its switch leaves the live index answering with every new vector
// made beside it (a candidate to measure); the next rebuild for the same model embeds
// nothing more and switches.
func TestRebuildHeldThenSwitched(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	_, before := fakeEmbedder(t)
	live := postgres.NewSiteIndex(db, 384)
	if _, err := (&sitesearch.Ingester{Index: live, Embedder: before}).Sync(ctx, "dir:demo", walkDemo); err != nil {
		t.Fatal(err)
	}
	fake, after := modelOn(t, "fake-after", 256)
	in := &sitesearch.Ingester{Index: postgres.NewSiteIndex(db, 256), Embedder: after, BatchSize: 16, Reindex: true, HoldSwitch: true}
	st, err := in.Sync(ctx, "dir:demo", walkDemo)
	if err != nil {
		t.Fatal(err)
	}
	s := stateOf(t, db)
	if st.Rebuild.Switched || st.Rebuild.Done != s.total || s.built != s.total || s.model != "fake-embed" || st.Pages != 0 {
		t.Fatalf("held rebuild %+v, %d pages synced; index %+v: want every new vector made, the live index unswitched and no sync", st.Rebuild, st.Pages, s)
	}
	checkCandidate(t, live, after)
	requests := len(fake.Requests())
	in.HoldSwitch = false
	if st, err = in.Sync(ctx, "dir:demo", walkDemo); err != nil {
		t.Fatal(err)
	}
	if s = stateOf(t, db); !st.Rebuild.Resumed || !st.Rebuild.Switched || s.model != "fake-after" || len(fake.Requests()) != requests {
		t.Fatalf("after the held rebuild: %+v, index %+v, %d more requests; want switched at once, with none", st.Rebuild, s, len(fake.Requests())-requests)
	}
}
