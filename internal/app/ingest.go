package app

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/sitetools/sitetools/internal/budget"
	"github.com/sitetools/sitetools/internal/config"
	"github.com/sitetools/sitetools/internal/content"
	"github.com/sitetools/sitetools/internal/fetch"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// IngestSitemap ingests the pages of the sitemap at sitemapURL into db's index, as
// `sitetools ingest --sitemap` does: every page the sitemap lists when urls is nil, a
// page whose <lastmod> has not moved not fetched at all, the others fetched
// conditionally, and the pages it no longer lists removed. Given urls (absolute, on the
// site: the caller checks), it fetches just those, conditionally, and removes only those
// that answer 404 or 410 (sitesearch.Ingester.Partial); the sitemap is not read. Either
// way the pages are recorded under the source "sitemap:"+sitemapURL, and the provider's
// token ratio is stored after the run. A sitemap of more pages than INGEST_MAX_PAGES is
// cut to the newest (content.Crawler.ReadSitemap): the others are not indexed, and
// removed if they were; IngestStats.LeftOut counts them. A page not fetched in full for
// INGEST_MAX_AGE is (sitesearch.Ingester.MaxAge).
func IngestSitemap(ctx context.Context, cfg config.Config, db *postgres.DB, sitemapURL string, urls []string, logger *slog.Logger) (sitesearch.IngestStats, error) {
	return SitemapIngest{SitemapURL: sitemapURL, URLs: urls}.Run(ctx, cfg, db, logger)
}

// SitemapIngest is one ingest over a sitemap, with the settings the command has beyond
// IngestSitemap's.
type SitemapIngest struct {
	SitemapURL string
	// URLs, if not nil, are the pages to ingest, alone (see IngestSitemap).
	URLs []string
	// Ingester is what stores the pages; nil: NewIngester of the configured embeddings.
	Ingester *sitesearch.Ingester
	// Concurrency is how many pages are fetched at once; 0: the crawler's default.
	Concurrency int
	// Started, if set, is told how many pages the run goes through, before the first.
	Started func(total int)
	// RebuildOnMismatch rebuilds an index of another model than the configured one
	// beside the live vectors before the sync (sitesearch.Ingester.RebuildOnMismatch).
	RebuildOnMismatch bool
	// Now is the clock of INGEST_MAX_AGE and of the sitemap's <lastmod> limit (nil:
	// time.Now).
	Now func() time.Time
}

// Run runs the ingest; see IngestSitemap.
func (s SitemapIngest) Run(ctx context.Context, cfg config.Config, db *postgres.DB, logger *slog.Logger) (sitesearch.IngestStats, error) {
	in := s.Ingester
	if in == nil {
		var err error
		if in, err = NewIngester(cfg.Embeddings, db, logger); err != nil {
			return sitesearch.IngestStats{}, err
		}
	}
	in.RebuildOnMismatch = in.RebuildOnMismatch || s.RebuildOnMismatch
	in.MaxAge, in.Now = cfg.Ingest.MaxAge, s.Now
	fetchOpts := cfg.Fetch
	fetchOpts.MaxBytes = max(fetchOpts.MaxBytes, content.MaxSitemapBytes+1) // a page has the crawler's own limit
	crawler := &content.Crawler{Client: fetch.New(fetchOpts), Concurrency: s.Concurrency, MaxPages: cfg.Ingest.MaxPages, Now: s.Now, Logger: logger}
	// The PDFs the pages link to on their own site, fetched as the pages are.
	in.Linked = func(urls []string) sitesearch.Walk { return sitesearch.URLWalk(ctx, crawler, urls) }
	var walk sitesearch.Walk
	total, leftOut := len(s.URLs), 0
	if s.URLs != nil {
		in.Partial = true
		walk = sitesearch.URLWalk(ctx, crawler, slices.Compact(slices.Sorted(slices.Values(s.URLs))))
	} else {
		list, err := crawler.ReadSitemap(ctx, s.SitemapURL)
		if err != nil {
			return sitesearch.IngestStats{}, err
		}
		total, leftOut = len(list.Entries), list.LeftOut
		if leftOut > 0 {
			logger.Warn("the sitemap lists more pages than INGEST_MAX_PAGES: the newest are indexed, the others left out",
				"indexed", total, "left_out", leftOut, "max_pages", crawler.MaxPages)
		}
		walk = sitesearch.SitemapWalk(ctx, crawler, list.Entries)
	}
	if s.Started != nil {
		s.Started(total)
	}
	st, err := in.Sync(ctx, "sitemap:"+s.SitemapURL, walk)
	st.LeftOut = leftOut
	if st.Failed > 0 {
		logger.Warn("some pages could not be fetched this time; their indexed copies are kept", "failed", st.Failed)
	}
	if err != nil {
		return st, err
	}
	StoreTokenRatio(ctx, cfg.Embeddings, db, in, st, logger)
	return st, nil
}

// StoreTokenRatio stores what the provider counted of an ingest's tokens against
// sitetools' own estimate: it sizes the query budget's reservations on every replica. A
// local embedder reports no count; a failure to store is logged, not returned.
func StoreTokenRatio(ctx context.Context, cfg config.Embeddings, db *postgres.DB, in *sitesearch.Ingester, st sitesearch.IngestStats, logger *slog.Logger) {
	if cfg.Provider == "local" || st.Estimated <= 0 || st.Tokens <= 0 {
		return
	}
	ratio := float64(st.Tokens) / float64(st.Estimated)
	if err := budget.StoreRatio(ctx, db.Pool, "embedding", in.Embedder.Model(), ratio); err != nil {
		logger.Warn("could not store the provider's token ratio", "err", fmt.Sprint(err))
	}
}
