package content

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// sitemapMaxBytes is the protocol's limit for one sitemap file, uncompressed: a gzip
// bomb is read no further. (A variable for the tests.)
var sitemapMaxBytes int64 = 50 << 20

const (
	// sitemapMaxDepth bounds nesting: an index of indexes of urlsets is depth 2.
	sitemapMaxDepth = 3
	sitemapMaxFiles = 1000
)

// Sitemap returns the page URLs listed by the sitemap at sitemapURL, which
// may be a urlset or a sitemap index (nested up to three levels), plain or
// gzip-compressed. Only URLs with the sitemap's own scheme and host are kept,
// without fragments, deduplicated and sorted. A sitemap that cannot be
// fetched or parsed is an error, since a partial list would make an ingest
// remove the pages it missed; so is a list longer than MaxPages.
func (c *Crawler) Sitemap(ctx context.Context, sitemapURL string) ([]string, error) {
	entries, err := c.SitemapEntries(ctx, sitemapURL)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.URL
	}
	return out, nil
}

// SitemapEntry is a page a sitemap lists, with its <lastmod> (zero: none, or one that
// is not a W3C datetime).
type SitemapEntry struct {
	URL     string
	Lastmod time.Time
}

// SitemapEntries is Sitemap with each URL's <lastmod>; a URL listed twice keeps the
// later one.
func (c *Crawler) SitemapEntries(ctx context.Context, sitemapURL string) ([]SitemapEntry, error) {
	origin := crawlOrigin(sitemapURL)
	if origin == "" {
		return nil, fmt.Errorf("content.Sitemap: %q is not an absolute http(s) URL", sitemapURL)
	}
	s := sitemapWalk{c: c, origin: origin, seen: map[string]bool{}, urls: map[string]time.Time{}}
	if err := s.visit(ctx, sitemapURL, 0); err != nil {
		return nil, fmt.Errorf("content.Sitemap: %w", err)
	}
	out := make([]SitemapEntry, 0, len(s.urls))
	for u, lastmod := range s.urls {
		out = append(out, SitemapEntry{URL: u, Lastmod: lastmod})
	}
	slices.SortFunc(out, func(a, b SitemapEntry) int { return strings.Compare(a.URL, b.URL) })
	return out, nil
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
	seen   map[string]bool      // sitemap files visited
	urls   map[string]time.Time // their lastmod
}

// sitemapDoc is either root element; encoding/xml matches by local name, so
// the sitemap namespace (or its absence) does not matter.
type sitemapDoc struct {
	XMLName  xml.Name
	URLs     []sitemapLoc `xml:"url"`
	Sitemaps []sitemapLoc `xml:"sitemap"`
}

type sitemapLoc struct {
	Loc     string `xml:"loc"`
	Lastmod string `xml:"lastmod"`
}

func (s *sitemapWalk) visit(ctx context.Context, sitemapURL string, depth int) error {
	if s.seen[sitemapURL] {
		return nil
	}
	s.seen[sitemapURL] = true
	if len(s.seen) > sitemapMaxFiles {
		return fmt.Errorf("more than %d sitemap files", sitemapMaxFiles)
	}
	doc, err := s.fetch(ctx, sitemapURL)
	if err != nil {
		return err
	}
	base, _ := url.Parse(sitemapURL)
	switch doc.XMLName.Local {
	case "urlset":
		for _, l := range doc.URLs {
			u, ok := s.resolve(base, l.Loc)
			if !ok {
				continue
			}
			if lastmod := parseLastmod(l.Lastmod); lastmod.After(s.urls[u]) || !s.has(u) {
				s.urls[u] = lastmod
			}
			if limit := s.c.maxPages(); len(s.urls) > limit {
				return fmt.Errorf("more than %d URLs, the limit", limit)
			}
		}
	case "sitemapindex":
		if depth+1 >= sitemapMaxDepth {
			return fmt.Errorf("%s: sitemap indexes nested deeper than %d levels", sitemapURL, sitemapMaxDepth)
		}
		for _, l := range doc.Sitemaps {
			u, ok := s.resolve(base, l.Loc)
			if !ok {
				s.c.logger().Info("ingest: sitemap on another host ignored", "sitemap", strings.TrimSpace(l.Loc))
				continue
			}
			if err := s.visit(ctx, u, depth+1); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("%s: root element <%s> is neither <urlset> nor <sitemapindex>", sitemapURL, doc.XMLName.Local)
	}
	return nil
}

func (s *sitemapWalk) has(u string) bool { _, ok := s.urls[u]; return ok }

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

func (s *sitemapWalk) fetch(ctx context.Context, sitemapURL string) (*sitemapDoc, error) {
	ctx, cancel := context.WithTimeout(ctx, s.c.timeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, sitemapURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", s.c.userAgent())
	resp, err := s.c.client().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: status %d", sitemapURL, resp.StatusCode)
	}
	// Sniff rather than trust names and headers: a .xml.gz may come as
	// application/gzip, application/octet-stream, or already decoded.
	body := bufio.NewReader(resp.Body)
	var r io.Reader = body
	if magic, _ := body.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(body)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sitemapURL, err)
		}
		defer zr.Close()
		r = zr
	}
	lr := &io.LimitedReader{R: r, N: sitemapMaxBytes + 1}
	var doc sitemapDoc
	if err := xml.NewDecoder(lr).Decode(&doc); err != nil {
		if lr.N <= 0 {
			return nil, fmt.Errorf("%s: larger than %d bytes", sitemapURL, sitemapMaxBytes)
		}
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("%s: %w", sitemapURL, err)
	}
	return &doc, nil
}
