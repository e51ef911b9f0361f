package sitesearch_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// fakeEmbedder is an OpenAI-compatible embedder of 384 dimensions on a fake provider
// that counts its requests.
func fakeEmbedder(t *testing.T) (*llmtest.Server, llm.Embedder) {
	t.Helper()
	fake := llmtest.NewServer(t, 384)
	embedder, err := llm.NewOpenAI(llm.OpenAIOptions{BaseURL: fake.BaseURL(), Model: "fake-embed", Dimensions: 384,
		Timeout: 2 * time.Second, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return fake, embedder
}

// TestIngestBatchesAcrossPages: the pages of one ingest share embedding requests, each
// full but the last; every page is stored; the vector index exists afterwards although
// the first load was written without it; and a second run makes no request.
func TestIngestBatchesAcrossPages(t *testing.T) {
	db := pgtest.NewDB(t)
	fake, embedder := fakeEmbedder(t)
	ctx := context.Background()
	in := &sitesearch.Ingester{Index: postgres.NewSiteIndex(db, 384), Embedder: embedder, BatchSize: 10}
	st, err := in.Sync(ctx, "dir:demo", walkDemo)
	if err != nil {
		t.Fatal(err)
	}
	reqs := fake.Requests()
	if st.ChunksEmbedded < 30 || st.EmbedCalls != len(reqs) || len(reqs) != (st.ChunksEmbedded+9)/10 {
		t.Fatalf("%d requests for %d chunks, want %d: %+v", len(reqs), st.ChunksEmbedded, (st.ChunksEmbedded+9)/10, st)
	}
	for i, n := range reqs[:len(reqs)-1] {
		if n != 10 {
			t.Fatalf("request %d of %d carried %d chunks, want 10: %v", i+1, len(reqs), n, reqs)
		}
	}
	var pages, chunks int
	if err := db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM pages), (SELECT count(*) FROM chunks)`).Scan(&pages, &chunks); err != nil {
		t.Fatal(err)
	}
	if pages != st.Pages || chunks != st.ChunksEmbedded+st.ChunksReused {
		t.Fatalf("stored %d pages and %d chunks after %+v", pages, chunks, st)
	}
	var indexes []string
	rows, err := db.Pool.Query(ctx, `SELECT indexname FROM pg_indexes WHERE tablename = 'chunks' ORDER BY 1`)
	if err == nil {
		for rows.Next() {
			var n string
			if err = rows.Scan(&n); err != nil {
				break
			}
			indexes = append(indexes, n)
		}
		rows.Close()
	}
	if err != nil || !slices.Contains(indexes, "chunks_embedding_hnsw_384") {
		t.Fatalf("indexes of chunks after the first ingest: %v %v", indexes, err)
	}
	if st, err = in.Sync(ctx, "dir:demo", walkDemo); err != nil || st.Unchanged != st.Pages || len(fake.Requests()) != len(reqs) {
		t.Fatalf("unchanged re-ingest: %v %+v, %d requests", err, st, len(fake.Requests())-len(reqs))
	}
}

// overlapIndex is an index whose page writes report how many run at once; the first
// waits, up to a deadline, for a second to start beside it.
type overlapIndex struct {
	sitesearch.Index
	mu     sync.Mutex
	calls  int
	active int
	most   int
	second chan struct{}
	once   sync.Once
}

func (x *overlapIndex) PutPage(ctx context.Context, m sitesearch.IndexModel, p sitesearch.PageRecord, chunks []sitesearch.ChunkRecord, vocabulary bool) error {
	x.mu.Lock()
	x.calls++
	x.active++
	x.most = max(x.most, x.active)
	first := x.calls == 1
	if x.active == 2 {
		x.once.Do(func() { close(x.second) })
	}
	x.mu.Unlock()
	if first {
		select {
		case <-x.second:
		case <-time.After(10 * time.Second):
		}
	}
	err := x.Index.PutPage(ctx, m, p, chunks, vocabulary)
	x.mu.Lock()
	x.active--
	x.mu.Unlock()
	return err
}

// TestIngestWritesPagesSideBySide: a page is written while another is, each whole, and
// the run stores every page and chunk it embedded.
func TestIngestWritesPagesSideBySide(t *testing.T) {
	db := pgtest.NewDB(t)
	fake, embedder := fakeEmbedder(t)
	ctx := context.Background()
	idx := &overlapIndex{Index: postgres.NewSiteIndex(db, 384), second: make(chan struct{})}
	in := &sitesearch.Ingester{Index: idx, Embedder: embedder, BatchSize: 4}
	st, err := in.Sync(ctx, "dir:demo", walkDemo)
	if err != nil {
		t.Fatal(err)
	}
	if idx.most < 2 {
		t.Fatalf("at most %d page written at once, want 2", idx.most)
	}
	if reqs := fake.Requests(); len(reqs) != st.EmbedCalls || len(reqs) != (st.ChunksEmbedded+3)/4 {
		t.Fatalf("%d requests for %d chunks in batches of 4: %+v", len(reqs), st.ChunksEmbedded, st)
	}
	var pages, chunks, orphans int
	if err := db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM pages), (SELECT count(*) FROM chunks),
		(SELECT count(*) FROM pages p WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.page_id = p.id))`).Scan(&pages, &chunks, &orphans); err != nil {
		t.Fatal(err)
	}
	if pages != st.Pages || st.Added != st.Pages || chunks != st.ChunksEmbedded+st.ChunksReused || orphans != 0 {
		t.Fatalf("stored %d pages (%d without chunks) and %d chunks after %+v", pages, orphans, chunks, st)
	}
}

// failingIndex is an index whose third page write fails.
type failingIndex struct {
	sitesearch.Index
	calls atomic.Int64
}

var errWriteRefused = errors.New("write refused")

func (x *failingIndex) PutPage(ctx context.Context, m sitesearch.IndexModel, p sitesearch.PageRecord, chunks []sitesearch.ChunkRecord, vocabulary bool) error {
	if x.calls.Add(1) == 3 {
		return errWriteRefused
	}
	return x.Index.PutPage(ctx, m, p, chunks, vocabulary)
}

// TestIngestWriteFailure: a page that cannot be written ends the run with its error, and
// every page stored meanwhile is whole.
func TestIngestWriteFailure(t *testing.T) {
	db := pgtest.NewDB(t)
	_, embedder := fakeEmbedder(t)
	ctx := context.Background()
	idx := &failingIndex{Index: postgres.NewSiteIndex(db, 384)}
	in := &sitesearch.Ingester{Index: idx, Embedder: embedder, BatchSize: 4}
	if _, err := in.Sync(ctx, "dir:demo", walkDemo); !errors.Is(err, errWriteRefused) {
		t.Fatalf("Sync: %v, want the refused write", err)
	}
	var pages, orphans int
	if err := db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM pages),
		(SELECT count(*) FROM pages p WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.page_id = p.id))`).Scan(&pages, &orphans); err != nil {
		t.Fatal(err)
	}
	if calls := int(idx.calls.Load()); pages != calls-1 || orphans != 0 {
		t.Fatalf("%d pages stored (%d without chunks) after %d writes, one refused", pages, orphans, calls)
	}
}
