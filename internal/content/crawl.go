package content

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sitetools/sitetools/internal/fetch"
	"github.com/sitetools/sitetools/internal/pdftext"
)

// DefaultUserAgent identifies the crawler to the sites it fetches.
const DefaultUserAgent = "sitetools-ingest/1.0 (+https://github.com/sitetools/sitetools)"

// Crawler fetches a site's pages over HTTP. The zero value is ready to use.
type Crawler struct {
	Client      *http.Client  // nil: fetch.New, public addresses only, bodies up to MaxSitemapBytes
	UserAgent   string        // default DefaultUserAgent
	Concurrency int           // requests in flight; default 4
	Timeout     time.Duration // per request, including reading the body; default 15s
	// MaxPages is the most pages a sitemap yields (past it, the newest: ReadSitemap) and
	// the most URLs Fetch takes (more is an error); default 100 000.
	MaxPages int
	MaxBytes int64 // a larger page is skipped; default 5 MB
	// PDF reads the PDFs among the pages (their content type application/pdf, or no type
	// and a name in .pdf), each up to MaxPDFBytes; nil: pdftext.Default.
	PDF *pdftext.Reader
	// Now is the clock a sitemap's <lastmod> is held to (nil: time.Now).
	Now func() time.Time

	// IgnoreRobots turns off the robots.txt check. By default Fetch skips the
	// URLs that robots.txt disallows for the User-Agent's product token
	// ("sitetools-ingest") or, when no group names it, for "*". The parser
	// follows RFC 9309 in its essentials: groups, Allow and Disallow, "*" and
	// "$", the longest match winning and Allow winning a tie. A robots.txt
	// that answers 4xx allows everything; so does one that cannot be fetched
	// (5xx, network), where RFC 9309 would disallow everything: an ingest
	// would then remove every page from the index because of a passing outage.
	IgnoreRobots bool

	// Progress, if set, is called after each URL is done, from the same
	// goroutine as Fetch's fn.
	Progress func(done, total int)

	Logger *slog.Logger // nil discards
}

// CrawlStats counts what Fetch did with its URLs. Each URL is counted once.
type CrawlStats struct {
	Pages       int // parsed and passed to fn
	NotModified int // answered 304 to a conditional request, passed to fn without a body
	Skipped     int // for good: 4xx other than 408 and 429, not HTML, over MaxBytes, disallowed by robots.txt, noindex (meta or X-Robots-Tag), refused by the client (see package fetch) but for a redirect to another host
	Failed      int // possibly for now: network errors, timeouts, 408, 429, 5xx, unreadable bodies, a redirect to another host
	// FailedURLs lists the failed URLs, sorted. An ingest should keep their
	// pages in the index rather than treat them as gone.
	FailedURLs []string
	// GoneURLs lists the skipped URLs that answered 404 or 410, sorted: the server says
	// they are no more, and an ingest of just some pages removes them.
	GoneURLs []string
	// BytesFetched counts the page bodies read, in bytes (robots.txt not included).
	BytesFetched int64
	// Rejected are the documents refused for what they hold (an encrypted or broken PDF,
	// one over a cap of the PDF reader), sorted by URL; each is counted in Skipped, or in
	// Failed when it ran out of time (which a less busy moment may not).
	Rejected []Rejection
}

// Target is a URL to fetch, with what the caller knows of the copy it holds: the
// validators of the response that copy came from, sent back as If-None-Match and
// If-Modified-Since, and the sitemap's <lastmod>, passed through to the document.
type Target struct {
	URL                string
	ETag, LastModified string
	Lastmod            time.Time
}

// conditional reports whether a request for t is conditional.
func (t Target) conditional() bool { return t.ETag != "" || t.LastModified != "" }

const (
	crawlDefaultConcurrency = 4
	crawlDefaultTimeout     = 15 * time.Second
	crawlDefaultMaxPages    = 100_000
	crawlDefaultMaxBytes    = 5 << 20
	crawlRobotsMaxBytes     = 512 << 10
)

// defaultClient is the crawler's client when none is given: public addresses only, see
// package fetch, and bodies as large as a sitemap's (a page's have MaxBytes).
var defaultClient = fetch.New(fetch.Options{MaxBytes: MaxSitemapBytes + 1})

func (c *Crawler) client() *http.Client {
	if c.Client != nil {
		return c.Client
	}
	return defaultClient
}

// refused reports whether a request failed on a rule of package fetch, which no retry
// can change: such a page is skipped, not failed.
func refused(err error) bool {
	for _, target := range []error{fetch.ErrBlockedAddress, fetch.ErrOffHostRedirect, fetch.ErrDowngrade, fetch.ErrTooManyRedirect, fetch.ErrTooLarge} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

func (c *Crawler) userAgent() string {
	if c.UserAgent != "" {
		return c.UserAgent
	}
	return DefaultUserAgent
}

func (c *Crawler) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return crawlDefaultTimeout
}

func (c *Crawler) maxPages() int {
	if c.MaxPages > 0 {
		return c.MaxPages
	}
	return crawlDefaultMaxPages
}

func (c *Crawler) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Crawler) maxBytes() int64 {
	if c.MaxBytes > 0 {
		return c.MaxBytes
	}
	return crawlDefaultMaxBytes
}

func (c *Crawler) logger() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// crawlOutcome says what became of one URL.
type crawlOutcome int

const (
	crawlPage crawlOutcome = iota
	crawlSkip
	crawlFail
)

type crawlResult struct {
	url     string
	doc     *Document
	outcome crawlOutcome
	reason  error
	gone    bool  // skipped on a 404 or 410
	bytes   int64 // of the body read
	refused bool  // for what it holds: reason is a *RejectedError
}

// Fetch fetches urls, at most Concurrency at a time, and calls fn with each
// page it could parse, one call at a time, in the order the pages arrive.
// A URL that cannot be fetched or parsed is counted and skipped; only an
// error from fn, more than MaxPages URLs, or the end of ctx stops Fetch,
// which then returns that error with the counts so far.
func (c *Crawler) Fetch(ctx context.Context, urls []string, fn func(*Document) error) (CrawlStats, error) {
	targets := make([]Target, len(urls))
	for i, u := range urls {
		targets[i] = Target{URL: u}
	}
	return c.FetchTargets(ctx, targets, fn)
}

// FetchTargets is Fetch for targets: a target with validators is asked for
// conditionally, and a 304 answer passes fn a document with NotModified set, which
// costs no body and no parsing. A document carries its target's Lastmod.
func (c *Crawler) FetchTargets(ctx context.Context, targets []Target, fn func(*Document) error) (CrawlStats, error) {
	var stats CrawlStats
	targets = crawlDedupe(targets)
	if len(targets) > c.maxPages() {
		return stats, fmt.Errorf("content.Fetch: %d URLs, more than the limit of %d", len(targets), c.maxPages())
	}
	if err := ctx.Err(); err != nil {
		return stats, fmt.Errorf("content.Fetch: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// One robots.txt an origin, asked for once: nil (none, or unavailable) allows all and
	// is remembered too, or a site without one would be asked for it before every page.
	robots := map[string]*crawlRobots{}
	if !c.IgnoreRobots {
		for _, t := range targets {
			o := crawlOrigin(t.URL)
			if _, asked := robots[o]; o != "" && !asked {
				robots[o] = c.robots(ctx, o)
			}
		}
	}
	results := c.fetchAll(ctx, targets, robots)

	var fnErr error
	done := 0
	for r := range results {
		if fnErr != nil || ctx.Err() != nil {
			continue // draining after fn failed or ctx ended
		}
		done++
		if err := c.tally(r, fn, &stats); err != nil {
			fnErr = err
			cancel()
			continue
		}
		if c.Progress != nil {
			c.Progress(done, len(targets))
		}
	}
	slices.Sort(stats.FailedURLs)
	slices.Sort(stats.GoneURLs)
	slices.SortFunc(stats.Rejected, func(a, b Rejection) int { return strings.Compare(a.URL, b.URL) })
	if fnErr != nil {
		return stats, fnErr
	}
	if err := ctx.Err(); err != nil {
		return stats, fmt.Errorf("content.Fetch: %w", err)
	}
	return stats, nil
}

// fetchAll fetches urls with Concurrency workers until ctx ends, and sends each result;
// the channel closes when every worker is done.
func (c *Crawler) fetchAll(ctx context.Context, targets []Target, robots map[string]*crawlRobots) <-chan crawlResult {
	jobs := make(chan Target)
	results := make(chan crawlResult)
	go func() {
		defer close(jobs)
		for _, t := range targets {
			select {
			case jobs <- t:
			case <-ctx.Done():
				return
			}
		}
	}()
	workers := c.Concurrency
	if workers <= 0 {
		workers = crawlDefaultConcurrency
	}
	var wg sync.WaitGroup
	for range min(workers, max(len(targets), 1)) {
		wg.Go(func() {
			for t := range jobs {
				r := c.fetchOne(ctx, t, robots[crawlOrigin(t.URL)])
				select {
				case results <- r:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	go func() {
		wg.Wait()
		close(results)
	}()
	return results
}

// tally counts one result, passing a parsed page to fn, whose error it returns.
func (c *Crawler) tally(r crawlResult, fn func(*Document) error, stats *CrawlStats) error {
	stats.BytesFetched += r.bytes
	if rej, ok := rejection(r.reason); ok && r.refused {
		stats.Rejected = append(stats.Rejected, rej)
		c.logger().Warn("ingest: document refused", "url", r.url, "reason", rej.Reason)
	}
	switch r.outcome {
	case crawlPage:
		if err := fn(r.doc); err != nil {
			return err
		}
		if r.doc.NotModified {
			stats.NotModified++
		} else {
			stats.Pages++
		}
	case crawlSkip:
		stats.Skipped++
		if r.gone {
			stats.GoneURLs = append(stats.GoneURLs, r.url)
		}
		c.logger().Info("ingest: page skipped", "url", r.url, "reason", r.reason)
	case crawlFail:
		stats.Failed++
		stats.FailedURLs = append(stats.FailedURLs, r.url)
		c.logger().Warn("ingest: page failed", "url", r.url, "err", r.reason)
	}
	return nil
}

func (c *Crawler) fetchOne(ctx context.Context, t Target, robots *crawlRobots) crawlResult {
	pageURL := t.URL
	res := crawlResult{url: pageURL, outcome: crawlSkip}
	u, err := url.Parse(pageURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		res.reason = fmt.Errorf("not an absolute http(s) URL")
		return res
	}
	if robots != nil && !robots.allowed(u.EscapedPath(), u.RawQuery) {
		res.reason = errors.New("disallowed by robots.txt")
		return res
	}
	outer := ctx // a PDF's reading has a deadline of its own
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	resp, err := c.get(ctx, t)
	if err != nil {
		res.reason = err
		// A redirect to another host is no word that the page is gone: a login or
		// consent wall, a passing misconfiguration. Kept, and asked for again next time.
		if !refused(err) || errors.Is(err, fetch.ErrOffHostRedirect) {
			res.outcome = crawlFail
		}
		return res
	}
	defer resp.Body.Close()
	if crawlOrigin(resp.Request.URL.String()) != crawlOrigin(pageURL) {
		res.outcome, res.reason = crawlFail, fmt.Errorf("redirected to another host: %s", resp.Request.URL.Host)
		return res
	}
	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusNotModified && t.conditional():
		res.outcome, res.doc = crawlPage, notModified(t, resp)
		return res
	case resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode >= 500:
		res.outcome, res.reason = crawlFail, fmt.Errorf("status %d", resp.StatusCode)
		return res
	default:
		res.gone = resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone
		res.reason = fmt.Errorf("status %d", resp.StatusCode)
		return res
	}
	ct := resp.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	pdf := isPDF(mt, u.Path)
	if !pdf && mt != "text/html" && mt != "application/xhtml+xml" {
		res.reason = fmt.Errorf("content type %q is not HTML", ct)
		return res
	}
	if headerNoIndex(resp.Header) {
		res.reason = errNoIndex
		return res
	}
	if pdf {
		res = c.readPDF(outer, res, resp)
	} else {
		res = c.readPage(res, resp, ct)
	}
	if res.doc != nil {
		res.doc.ETag, res.doc.LastModified, res.doc.Lastmod = resp.Header.Get("ETag"), resp.Header.Get("Last-Modified"), t.Lastmod
	}
	return res
}

// get sends the request for t, conditional when t has validators.
func (c *Crawler) get(ctx context.Context, t Target) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.URL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", c.userAgent())
	req.Header.Set("Accept", "text/html,application/xhtml+xml;q=0.9,application/pdf;q=0.8,*/*;q=0.1")
	if t.ETag != "" {
		req.Header.Set("If-None-Match", t.ETag)
	}
	if t.LastModified != "" {
		req.Header.Set("If-Modified-Since", t.LastModified)
	}
	return c.client().Do(req)
}

// notModified is the document of a 304 answer to t: its URL, its path and its
// validators, those the answer sent or else t's.
func notModified(t Target, resp *http.Response) *Document {
	doc, _ := extractNewDocument(t.URL) // the URL parsed before the request was sent
	doc.ETag, doc.LastModified, doc.Lastmod, doc.NotModified = t.ETag, t.LastModified, t.Lastmod, true
	if v := resp.Header.Get("ETag"); v != "" {
		doc.ETag = v
	}
	if v := resp.Header.Get("Last-Modified"); v != "" {
		doc.LastModified = v
	}
	return doc
}

// readPage reads and parses the body of a page's 200 response, within MaxBytes.
func (c *Crawler) readPage(res crawlResult, resp *http.Response, ct string) crawlResult {
	pageURL := res.url
	limit := c.maxBytes()
	if resp.ContentLength > limit {
		res.reason = fmt.Errorf("%d bytes, over the limit of %d", resp.ContentLength, limit)
		return res
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	res.bytes = int64(len(body))
	if err != nil {
		if res.reason = err; !refused(err) {
			res.outcome = crawlFail
		}
		return res
	}
	if int64(len(body)) > limit {
		res.reason = fmt.Errorf("over the limit of %d bytes", limit)
		return res
	}
	doc, err := extractHTML(body, pageURL, ct)
	if err != nil {
		if errors.Is(err, ErrPageTooLarge) {
			res.reason = err
		} else {
			res.outcome, res.reason = crawlFail, err
		}
		return res
	}
	if doc.NoIndex {
		res.reason = errNoIndex
		return res
	}
	res.outcome, res.doc = crawlPage, doc
	return res
}

// errNoIndex is why a page that asks to be left out of the index is skipped: skipped,
// not failed, so that an ingest removes it if it was indexed before.
var errNoIndex = errors.New("the page asks not to be indexed (noindex)")

// crawlDedupe drops repeated URLs, keeping the first target of each.
func crawlDedupe(targets []Target) []Target {
	seen := make(map[string]bool, len(targets))
	out := make([]Target, 0, len(targets))
	for _, t := range targets {
		if !seen[t.URL] {
			seen[t.URL] = true
			out = append(out, t)
		}
	}
	return out
}

// crawlOrigin returns "scheme://host[:port]" of an absolute http(s) URL,
// lower-cased and without a default port; "" for anything else.
func crawlOrigin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if p := u.Port(); p != "" && !(scheme == "http" && p == "80") && !(scheme == "https" && p == "443") {
		host += ":" + p
	}
	return scheme + "://" + host
}
