package cli

import (
	"bytes"
	"context"
	"regexp"
	"testing"

	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
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
