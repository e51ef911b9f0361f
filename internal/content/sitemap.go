package content

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// MaxSitemapBytes is the sitemap protocol's limit for one file, uncompressed: a larger
// one (a gzip bomb) is read no further. A client given to the crawler must let a body of
// MaxSitemapBytes + 1 through, for a file at the limit to be told from one past it.
const MaxSitemapBytes = 50 << 20

// The sitemap protocol's limits (https://www.sitemaps.org/protocol.html), and sitetools'
// own for what the protocol leaves open. Each bounds what one sitemap can cost to read.
var (
	sitemapMaxBytes int64 = MaxSitemapBytes // a variable for the tests
	// sitemapMaxToken bounds one XML token (a run of text or blanks, a comment), which
	// the XML decoder holds whole in memory: past it the file is refused.
	sitemapMaxToken int64 = 1 << 20
)

const (
	// sitemapMaxDepth bounds nesting: an index of indexes of urlsets is depth 2.
	sitemapMaxDepth = 3
	sitemapMaxFiles = 1000
	// sitemapMaxEntries is the protocol's limit of <url> (or <sitemap>) entries in one
	// file: the entries past it are left out, and counted.
	sitemapMaxEntries = 50_000
	// sitemapMaxLoc is the protocol's limit of a <loc>: an entry with a longer one is
	// ignored (PostgreSQL could not index such a URL either).
	sitemapMaxLoc = 2048
	// sitemapMaxLastmod bounds a <lastmod>'s text; a longer one is no date.
	sitemapMaxLastmod = 64
)

// Sitemap returns the page URLs listed by the sitemap at sitemapURL, sorted; see
// ReadSitemap.
func (c *Crawler) Sitemap(ctx context.Context, sitemapURL string) ([]string, error) {
	list, err := c.ReadSitemap(ctx, sitemapURL)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(list.Entries))
	for i, e := range list.Entries {
		out[i] = e.URL
	}
	return out, nil
}

// SitemapEntry is a page a sitemap lists, with its <lastmod> (zero: none, or one that
// is not a W3C datetime), never later than when the sitemap was fetched.
type SitemapEntry struct {
	URL     string
	Lastmod time.Time
}

// SitemapList is what ReadSitemap found: the pages to index, and how many it left out.
type SitemapList struct {
	// Entries are sorted by URL.
	Entries []SitemapEntry
	// LeftOut counts the URLs listed beyond MaxPages (the newest were kept) and beyond
	// the protocol's 50 000 entries in one file. A URL listed more than once outside the
	// subset counts each time: no record is kept of the pages left out.
	LeftOut int
}

// ReadSitemap reads the sitemap at sitemapURL, a urlset or a sitemap index (nested up
// to three levels), plain or gzip-compressed, as a stream: one entry at a time, holding
// only the URLs it keeps. Only URLs with the sitemap's own scheme and host are kept,
// without fragments and deduplicated; a URL listed twice keeps the later <lastmod>. A
// <lastmod> later than the fetch of its file is taken as that time: a page dated in the
// future would otherwise never look changed again.
//
// Past MaxPages URLs it keeps the MaxPages newest by <lastmod> (on a tie, and among the
// pages without one, the first by URL), whatever their order in the files, and counts
// the others in LeftOut. A sitemap that cannot be fetched or parsed, or one past the
// protocol's 50 MB a file, 1000 files, or sitetools' 1 MB a token, is an error naming the
// file and the limit, since a partial list would make an ingest remove the pages it
// missed.
func (c *Crawler) ReadSitemap(ctx context.Context, sitemapURL string) (SitemapList, error) {
	origin := crawlOrigin(sitemapURL)
	if origin == "" {
		return SitemapList{}, fmt.Errorf("content.Sitemap: %q is not an absolute http(s) URL", sitemapURL)
	}
	s := sitemapWalk{c: c, origin: origin, seen: map[string]bool{}, keep: newSitemapKeep(c.maxPages())}
	if err := s.visit(ctx, sitemapURL, 0); err != nil {
		return SitemapList{}, fmt.Errorf("content.Sitemap: %w", err)
	}
	out := s.keep.entries()
	slices.SortFunc(out, func(a, b SitemapEntry) int { return strings.Compare(a.URL, b.URL) })
	return SitemapList{Entries: out, LeftOut: s.keep.leftOut}, nil
}

// sitemapLastmodLayouts are the forms of a W3C datetime (https://www.w3.org/TR/NOTE-datetime)
// that a <lastmod> may take, longest first.
var sitemapLastmodLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04Z07:00", "2006-01-02", "2006-01", "2006"}

// parseLastmod parses a <lastmod>; zero for one that is empty or not a W3C datetime.
func parseLastmod(s string) time.Time {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}
	}
	for _, layout := range sitemapLastmodLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

type sitemapWalk struct {
	c      *Crawler
	origin string
	seen   map[string]bool // sitemap files visited
	keep   *sitemapKeep
}

func (s *sitemapWalk) visit(ctx context.Context, sitemapURL string, depth int) error {
	if s.seen[sitemapURL] {
		return nil
	}
	s.seen[sitemapURL] = true
	if len(s.seen) > sitemapMaxFiles {
		return fmt.Errorf("%s: more than %d sitemap files, the limit", sitemapName(sitemapURL), sitemapMaxFiles)
	}
	f, err := s.c.openSitemap(ctx, sitemapURL)
	if err != nil {
		return err
	}
	defer f.close()
	root, err := f.root()
	if err != nil {
		return f.fail(err)
	}
	switch root {
	case "urlset":
		return s.readURLSet(f)
	case "sitemapindex":
		if depth+1 >= sitemapMaxDepth {
			return fmt.Errorf("%s: sitemap indexes nested deeper than %d levels", f.name, sitemapMaxDepth)
		}
		children, err := s.readIndex(f)
		f.close() // before the children: an index may list a thousand of them
		if err != nil {
			return err
		}
		for _, u := range children {
			if err := s.visit(ctx, u, depth+1); err != nil {
				return err
			}
		}
		return nil
	default:
		return fmt.Errorf("%s: root element <%s> is neither <urlset> nor <sitemapindex>", f.name, root)
	}
}

// readURLSet keeps the pages of a urlset, up to the protocol's entries a file; the
// entries past it are counted as left out, unless they name a page kept already.
func (s *sitemapWalk) readURLSet(f *sitemapFile) error {
	n, long := 0, 0
	for {
		e, ok, err := f.entry("url")
		if err != nil {
			return f.fail(err)
		}
		if !ok {
			break
		}
		if e.longLoc {
			long++
			continue
		}
		u, ok := s.resolve(f.base, e.loc)
		if !ok {
			continue
		}
		if n++; n > sitemapMaxEntries {
			if !s.keep.has(u) {
				s.keep.leftOut++
			}
			continue
		}
		lastmod := parseLastmod(e.lastmod)
		if lastmod.After(f.fetched) {
			lastmod = f.fetched
		}
		s.keep.add(u, lastmod)
	}
	if long > 0 {
		s.c.logger().Warn("ingest: sitemap entries with a <loc> over the protocol's limit ignored", "sitemap", f.name, "entries", long, "limit", sitemapMaxLoc)
	}
	if n > sitemapMaxEntries {
		s.c.logger().Warn("ingest: sitemap over the protocol's limit of entries a file; the rest of it is left out",
			"sitemap", f.name, "entries", n, "limit", sitemapMaxEntries)
	}
	return nil
}

// readIndex returns the sitemaps an index lists on the site's own origin, up to the
// limit of files.
func (s *sitemapWalk) readIndex(f *sitemapFile) ([]string, error) {
	var out []string
	for {
		e, ok, err := f.entry("sitemap")
		if err != nil {
			return nil, f.fail(err)
		}
		if !ok {
			return out, nil
		}
		u, ok := s.resolve(f.base, e.loc)
		if !ok {
			if !e.longLoc {
				s.c.logger().Info("ingest: sitemap on another host ignored", "sitemap", sitemapName(strings.TrimSpace(e.loc)))
			}
			continue
		}
		if s.seen[u] || slices.Contains(out, u) {
			continue
		}
		if len(s.seen)+len(out) >= sitemapMaxFiles {
			return nil, fmt.Errorf("%s: more than %d sitemap files, the limit", f.name, sitemapMaxFiles)
		}
		out = append(out, u)
	}
}

// resolve makes loc absolute and reports whether it is on the sitemap's origin.
func (s *sitemapWalk) resolve(base *url.URL, loc string) (string, bool) {
	loc = strings.TrimSpace(loc)
	if loc == "" {
		return "", false
	}
	ref, err := url.Parse(loc)
	if err != nil {
		return "", false
	}
	u := base.ResolveReference(ref)
	u.Fragment, u.RawFragment = "", ""
	if crawlOrigin(u.String()) != s.origin {
		return "", false
	}
	return u.String(), true
}

// sitemapName is how messages name a sitemap file: without its query, which may carry a
// token.
func sitemapName(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "a sitemap"
	}
	u.RawQuery, u.ForceQuery, u.Fragment, u.User = "", false, "", nil
	return u.String()
}
