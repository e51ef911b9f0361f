package app

import (
	"context"
	"log/slog"

	"github.com/sitetools/sitetools/internal/config"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// ingestSitemapFunc is the ingest a sync runs: the whole sitemap with removals (urls
// nil), or just urls (IngestSitemap).
type ingestSitemapFunc func(ctx context.Context, cfg config.Config, db *postgres.DB, sitemapURL string, urls []string, logger *slog.Logger) (sitesearch.IngestStats, error)

// syncPages is what an ingest did to the pages, as index_syncs records it, and the
// bytes it fetched. Unchanged counts the pages not modified and skipped too.
func syncPages(st sitesearch.IngestStats) (postgres.SyncPages, int64) {
	return postgres.SyncPages{Added: st.Added, Updated: st.Updated, Unchanged: st.Unchanged, NotModified: st.NotModified,
		Skipped: st.Skipped, Removed: st.Removed, Failed: st.Failed}, st.BytesFetched
}
