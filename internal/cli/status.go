package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// printIndexStatus writes the status line of the index's sync with the site: the last
// sync that finished (serve's timer or the publish hook), how it ended and what it did,
// or that none has. A database error is the line's text: the report goes on.
func printIndexStatus(ctx context.Context, db *postgres.DB, out io.Writer) {
	last, err := postgres.LastSync(ctx, db)
	if err != nil {
		fmt.Fprintf(out, "index: sync status unavailable: %v\n", err)
		return
	}
	fmt.Fprintln(out, indexStatus(last))
	p, ok, err := postgres.NewSiteIndex(db, 0).RebuildProgress(ctx)
	switch {
	case err != nil:
		fmt.Fprintf(out, "index: rebuild status unavailable: %v\n", err)
	case ok:
		fmt.Fprintln(out, rebuildStatus(p))
	}
}

// rebuildStatus is the status line of a rebuild under way (or stopped, to be resumed).
func rebuildStatus(p sitesearch.RebuildProgress) string {
	share := 100.0
	if p.Total > 0 {
		share = 100 * float64(p.Done) / float64(p.Total)
	}
	return fmt.Sprintf("index: rebuild for %s since %s: %d of %d chunks have their new vector (%.0f%%); search answers from the live vectors until it switches",
		p.Model, p.Started.UTC().Format(time.RFC3339), p.Done, p.Total, share)
}

// indexStatus is the status line of the last finished sync (nil: none).
func indexStatus(last *postgres.IndexSync) string {
	if last == nil || last.Finished == nil {
		return "index: never synced"
	}
	p := last.Pages
	what := "all pages"
	if !last.All {
		what = fmt.Sprintf("%d URLs", len(last.URLs))
	}
	line := fmt.Sprintf("index: last sync %s (%s, %s), %s: %d added, %d updated, %d unchanged (%d not modified, %d skipped), %d removed, %d failed, %d bytes fetched",
		last.Finished.UTC().Format(time.RFC3339), last.Trigger, last.Outcome, what,
		p.Added, p.Updated, p.Unchanged, p.NotModified, p.Skipped, p.Removed, p.Failed, last.BytesFetched)
	if last.Error != "" {
		line += ": " + last.Error
	}
	return line
}
