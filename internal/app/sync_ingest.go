package app

import (
	"context"
	"log/slog"

	"github.com/sitetools/sitetools/internal/config"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// ingestSitemapFunc is the ingest a sync runs: the whole sitemap with removals (urls
// nil), or just urls (IngestSitemap); with rebuild, an index of another model than the
// configured one is rebuilt beside the live vectors first.
type ingestSitemapFunc func(ctx context.Context, cfg config.Config, db *postgres.DB, sitemapURL string, urls []string, rebuild bool, logger *slog.Logger) (sitesearch.IngestStats, error)

// syncIngest is the ingest of serve's syncs. Only a whole-site publish hook's job (POST
// /admin/reindex {"all": true}) rebuilds an index of another model: the timer's syncs
// and the hooks for some pages fail on one (ErrModelMismatch says what to do), so that
// a replica left with the model before cannot undo a rebuild another process made.
func syncIngest(ctx context.Context, cfg config.Config, db *postgres.DB, sitemapURL string, urls []string, rebuild bool, logger *slog.Logger) (sitesearch.IngestStats, error) {
	return SitemapIngest{SitemapURL: sitemapURL, URLs: urls, RebuildOnMismatch: rebuild}.Run(ctx, cfg, db, logger)
}

// syncPages is what an ingest did to the pages, as index_syncs records it, and the
// bytes it fetched. Unchanged counts the pages not modified and skipped too.
func syncPages(st sitesearch.IngestStats) (postgres.SyncPages, int64) {
	return postgres.SyncPages{Added: st.Added, Updated: st.Updated, Unchanged: st.Unchanged, NotModified: st.NotModified,
		Skipped: st.Skipped, Removed: st.Removed, Failed: st.Failed, LeftOut: st.LeftOut}, st.BytesFetched
}
