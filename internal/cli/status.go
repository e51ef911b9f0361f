package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/sitetools/sitetools/internal/postgres"
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
