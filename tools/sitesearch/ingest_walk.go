package sitesearch

import (
	"context"
	"time"

	"github.com/sitetools/sitetools/internal/content"
)

// SitemapWalk is the walk of a sitemap's entries with crawler. A stored page whose
// <lastmod> has not moved since it was stored (both known) is not fetched at all; the
// others are asked for conditionally when the index holds validators of them, and a 304
// stands for the stored page. A page Due is fetched in full, whatever its <lastmod>.
func SitemapWalk(ctx context.Context, crawler *content.Crawler, entries []content.SitemapEntry) Walk {
	return func(known func(string) (PageState, bool), fn func(*content.Document) error) (WalkResult, error) {
		var res WalkResult
		targets := make([]content.Target, 0, len(entries))
		for _, e := range entries {
			have, ok := known(e.URL)
			lastmod := e.Lastmod.Truncate(time.Microsecond) // as the index keeps it
			if ok && !have.Due && !lastmod.IsZero() && !have.Lastmod.IsZero() && !lastmod.After(have.Lastmod) {
				res.Skipped = append(res.Skipped, e.URL)
				continue
			}
			t := content.Target{URL: e.URL, Lastmod: e.Lastmod}
			if ok && !have.Due {
				t.ETag, t.LastModified = have.ETag, have.LastModified
			}
			targets = append(targets, t)
		}
		fetched, err := fetchWalk(ctx, crawler, targets, fn)
		fetched.Skipped = res.Skipped
		return fetched, err
	}
}

// DirWalk is the walk of the HTML, Markdown and PDF files under dir, as the pages of
// baseURL (content.WalkDirReport); it reads every file, and fails no page. A PDF refused
// for what it holds is reported (Rejected), and its indexed copy removed.
func DirWalk(dir, baseURL string) Walk {
	return func(_ func(string) (PageState, bool), fn func(*content.Document) error) (WalkResult, error) {
		rejected, err := content.WalkDirReport(dir, baseURL, fn)
		return WalkResult{Rejected: rejected}, err
	}
}

// URLWalk is the walk of just urls with crawler, for a Partial Sync: every one is
// fetched, conditionally when the index holds validators of it (and the page is not
// Due), and a page keeps the <lastmod> it was stored with (no sitemap was read to know a
// newer one).
func URLWalk(ctx context.Context, crawler *content.Crawler, urls []string) Walk {
	return func(known func(string) (PageState, bool), fn func(*content.Document) error) (WalkResult, error) {
		targets := make([]content.Target, len(urls))
		for i, u := range urls {
			targets[i] = content.Target{URL: u}
			if have, ok := known(u); ok {
				targets[i].Lastmod = have.Lastmod
				if !have.Due {
					targets[i].ETag, targets[i].LastModified = have.ETag, have.LastModified
				}
			}
		}
		return fetchWalk(ctx, crawler, targets, fn)
	}
}

// fetchWalk fetches targets with crawler, yielding their documents to fn.
func fetchWalk(ctx context.Context, crawler *content.Crawler, targets []content.Target, fn func(*content.Document) error) (WalkResult, error) {
	stats, err := crawler.FetchTargets(ctx, targets, fn)
	return WalkResult{Failed: stats.FailedURLs, Gone: stats.GoneURLs, BytesFetched: stats.BytesFetched, Rejected: stats.Rejected}, err
}
