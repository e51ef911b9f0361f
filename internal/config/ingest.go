package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Ingest configures the sync that serve runs: the site's sitemap is ingested again every
// Interval on one replica at a time, and the publish hook (POST /admin/reindex)
// re-ingests pages on demand; and the limits of every sitemap ingest, serve's and
// `sitetools ingest --sitemap`'s.
type Ingest struct {
	// SitemapURL is the site's sitemap (INGEST_SITEMAP_URL); empty: no sync in serve, and
	// no publish hook.
	SitemapURL string
	// Interval is how often the whole sitemap is synced (INGEST_INTERVAL, ±10 % jitter a
	// run); 0: never on a timer, while the hook still works.
	Interval time.Duration
	// MaxPages is the most pages a sitemap ingest indexes (INGEST_MAX_PAGES): past it, the
	// newest by <lastmod>; the others are left out, counted, and not kept in the index.
	MaxPages int
	// MaxAge is how long a page may go without being fetched in full (INGEST_MAX_AGE):
	// past it, its server's 304 or an unmoved <lastmod> is not taken for it once. 0:
	// never.
	MaxAge time.Duration
}

// Origin is the site's origin as the publish hook knows it: the scheme, host and port of
// SitemapURL. The hook accepts URLs on it and resolves paths against it; empty without a
// sitemap.
func (i Ingest) Origin() string {
	o, err := origin(i.SitemapURL)
	if err != nil {
		return ""
	}
	return o
}

// The defaults of Ingest. 100 000 pages is a large site's size: what the sync holds of
// them (the sitemap's URLs, the index's page states) is some tens of MB
// (docs/large-sites.md). A week bounds how long a server's wrong 304s, or a <lastmod>
// that never moves, can keep a page out of date, at the cost of fetching about a fifth
// of an unchanged site's pages in full a day.
const (
	defaultIngestInterval = time.Hour
	DefaultIngestMaxPages = 100_000
	DefaultIngestMaxAge   = 7 * 24 * time.Hour
	maxIngestMaxPages     = 1_000_000
)

func (i *Ingest) load(l *loader) {
	i.SitemapURL = l.str("INGEST_SITEMAP_URL", "")
	if i.SitemapURL != "" {
		if _, err := origin(i.SitemapURL); err != nil {
			// The URL may carry a token in its query: never repeat it.
			l.fail("INGEST_SITEMAP_URL", "must be an absolute http(s) URL such as https://example.com/sitemap.xml")
		}
	}
	i.Interval = defaultIngestInterval
	switch v, _ := l.lookup("INGEST_INTERVAL"); v {
	case "":
	case "0":
		i.Interval = 0
	default:
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second {
			l.fail("INGEST_INTERVAL", fmt.Sprintf("must be a duration of at least 1s such as 1h, or 0 for no sync on a timer, got %q", v))
			break
		}
		i.Interval = d
	}
	i.MaxPages = l.integer("INGEST_MAX_PAGES", DefaultIngestMaxPages, 1, maxIngestMaxPages)
	i.MaxAge = DefaultIngestMaxAge
	switch v, _ := l.lookup("INGEST_MAX_AGE"); v {
	case "":
	case "0":
		i.MaxAge = 0
	default:
		d, err := parseDays(v)
		if err != nil || d < time.Hour {
			l.fail("INGEST_MAX_AGE", fmt.Sprintf("must be a duration of at least 1h such as 7d or 72h, or 0 never to fetch a page in full for its age, got %q", v))
			break
		}
		i.MaxAge = d
	}
}

// parseDays parses a Go duration, or a whole number of days such as 7d.
func parseDays(v string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(v, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days < 0 || days > 100_000 {
			return 0, fmt.Errorf("not a number of days: %q", v)
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	return time.ParseDuration(v)
}
