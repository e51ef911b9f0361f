package cli

import (
	"bytes"
	"context"
	"regexp"
	"testing"

	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// TestIndexStatus: `sitetools usage` says the index was never synced, then names the
// last finished sync with its trigger, outcome and counts.
func TestIndexStatus(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	var out bytes.Buffer
	printIndexStatus(ctx, db, &out)
	if out.String() != "index: never synced\n" {
		t.Errorf("before any sync: %q", out.String())
	}
	syncs := postgres.NewIndexSyncs(db)
	id, err := syncs.StartInterval(ctx)
	if err != nil {
		t.Fatal(err)
	}
	printIndexStatus(ctx, db, &out)
	if out.String() != "index: never synced\nindex: never synced\n" {
		t.Errorf("with a sync running: %q; want never synced", out.String())
	}
	if err := syncs.Finish(ctx, id, "partial", postgres.SyncPages{Added: 1, Updated: 2, Unchanged: 30, NotModified: 20, Removed: 3, Failed: 4}, 5120, ""); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	printIndexStatus(ctx, db, &out)
	want := regexp.MustCompile(`^index: last sync \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(interval, partial\), all pages: 1 added, 2 updated, 30 unchanged \(20 not modified, 0 skipped\), 3 removed, 4 failed, 5120 bytes fetched\n$`)
	if !want.MatchString(out.String()) {
		t.Errorf("after a sync: %q", out.String())
	}
}

// A rebuild under way (or stopped, to resume) is a line of its own, with its model and
// how many chunks have their new vector; it goes with the switch.
func TestIndexStatusRebuild(t *testing.T) {
	ctx := context.Background()
	db := pgtest.NewDB(t)
	if _, err := db.Pool.Exec(ctx, `WITH p AS (INSERT INTO pages (url, path, title, body, content_hash, source)
		VALUES ('https://example.com/a', '/a', 'A', 'a', 'h', 'dir:x') RETURNING id)
		INSERT INTO chunks (page_id, ord, body, content_hash, embedding) SELECT id, n, 'a', 'h' || n, '[1,0]' FROM p, generate_series(1, 4) n`); err != nil {
		t.Fatal(err)
	}
	index := postgres.NewSiteIndex(db, 2)
	m := sitesearch.IndexModel{Name: "next-model", Dimensions: 3}
	if _, err := index.BeginRebuild(ctx, m); err != nil {
		t.Fatal(err)
	}
	chunks, err := index.PendingChunks(ctx, 0, 1)
	if err != nil || len(chunks) != 1 {
		t.Fatalf("pending: %v, %v", chunks, err)
	}
	if err := index.PutNextVectors(ctx, []int64{chunks[0].ID}, [][]float32{{1, 0, 0}}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	printIndexStatus(ctx, db, &out)
	want := regexp.MustCompile(`\nindex: rebuild for next-model \(3 dimensions\) since \S+: 1 of 4 chunks have their new vector \(25%\); search answers from the live vectors until it switches\n$`)
	if !want.MatchString(out.String()) {
		t.Errorf("during a rebuild: %q", out.String())
	}
}
