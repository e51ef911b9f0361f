package appointments

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/sitetools/sitetools/internal/fetch"
)

// ErrAvailabilityUnknown is wrapped by every error of ICSFeeds.Busy: some calendar feed could
// not be read and no usable copy of it was at hand, so the busy time is not known. Callers
// must fail closed (answer that availability is temporarily unknown) and never offer slots
// without it.
var ErrAvailabilityUnknown = errors.New("availability is temporarily unknown")

// Defaults of ICSFeedOptions, and the pause after a failed fetch before a feed is fetched
// again, so that a failing calendar server is not asked on every query.
const (
	defaultICSTimeout  = 10 * time.Second
	defaultICSTTL      = 5 * time.Minute
	defaultICSMaxStale = time.Hour
	icsRetryAfter      = 30 * time.Second
)

// ICSFeedOptions configures ICSFeeds; the zero value means the defaults.
type ICSFeedOptions struct {
	// Client fetches the feeds; nil means fetch.New with Timeout: public addresses only,
	// redirects on the feed's host.
	Client *http.Client
	// Timeout bounds each fetch, body included; 0 means 10 seconds.
	Timeout time.Duration
	// TTL is how long a fetched copy is used without asking the server again; 0 means 5
	// minutes.
	TTL time.Duration
	// MaxStale is how old a copy may be and still be used while a new one is fetched in the
	// background; 0 means 1 hour. It must not be less than TTL.
	MaxStale time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives fetch failures and events over the expansion caps (feed number and
	// host, event positions only); nil discards.
	Logger *slog.Logger
}

// ICSFeeds reads busy time from iCalendar feeds (AVAILABILITY_ICS_URLS) over HTTP. Each
// feed is fetched when first needed and kept, parsed, for TTL; an older copy, up to
// MaxStale, is still used while one background fetch per feed replaces it. A feed that
// cannot be read and has no usable copy makes Busy fail with ErrAvailabilityUnknown.
//
// Feed URLs may carry secrets (private calendar links, user info): they appear in no log line
// and no error, which name a feed by its number and host.
type ICSFeeds struct {
	feeds                  []*icsFeed
	client                 *http.Client
	timeout, ttl, maxStale time.Duration
	now                    func() time.Time
	log                    *slog.Logger
	fetches                singleflight.Group

	mu         sync.Mutex // guards closed and background.Add against Close
	closed     bool
	background sync.WaitGroup
}

// icsFeed is one feed and its cached copy.
type icsFeed struct {
	url  string
	name string // "ics feed 2 (calendar.example.com)"
	key  string // for singleflight

	mu      sync.Mutex
	cal     *icsCalendar
	fetched time.Time // when the fetch of cal began
	failed  time.Time // when the last failed fetch began; zero after a success
	err     error     // that failure
}

// NewICSFeeds checks the feed URLs (http or https, with a host, each once) and the options.
// Every problem is reported, joined.
func NewICSFeeds(urls []string, opts ICSFeedOptions) (*ICSFeeds, error) {
	var errs []error
	f := &ICSFeeds{
		client: opts.Client, timeout: opts.Timeout, ttl: opts.TTL, maxStale: opts.MaxStale,
		now: opts.Now, log: opts.Logger,
	}
	seen := make(map[string]bool)
	for i, raw := range urls {
		name := fmt.Sprintf("ics feed %d", i+1)
		raw = strings.TrimSpace(raw)
		// Messages never quote the URL: it may hold credentials.
		u, err := url.Parse(raw)
		switch {
		case raw == "":
			errs = append(errs, fmt.Errorf("%s: empty URL", name))
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: not a valid URL", name))
		case u.Scheme != "http" && u.Scheme != "https":
			errs = append(errs, fmt.Errorf("%s: scheme must be http or https (for a webcal:// link, use https://)", name))
		case u.Host == "":
			errs = append(errs, fmt.Errorf("%s: URL has no host", name))
		case seen[u.String()]:
			errs = append(errs, fmt.Errorf("%s: same URL as an earlier feed", name))
		default:
			seen[u.String()] = true
			f.feeds = append(f.feeds, &icsFeed{
				url:  u.String(),
				name: fmt.Sprintf("%s (%s)", name, u.Host),
				key:  strconv.Itoa(i),
			})
		}
	}
	for _, d := range []struct {
		name  string
		value *time.Duration
		def   time.Duration
	}{{"Timeout", &f.timeout, defaultICSTimeout}, {"TTL", &f.ttl, defaultICSTTL}, {"MaxStale", &f.maxStale, defaultICSMaxStale}} {
		switch {
		case *d.value < 0:
			errs = append(errs, fmt.Errorf("%s: %v is negative", d.name, *d.value))
		case *d.value == 0:
			*d.value = d.def
		}
	}
	if f.maxStale < f.ttl {
		errs = append(errs, fmt.Errorf("MaxStale (%v) is less than TTL (%v)", f.maxStale, f.ttl))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("appointments.NewICSFeeds: %w", errors.Join(errs...))
	}
	if f.client == nil {
		// Each fetch's context holds Timeout; the client's own is only a backstop.
		f.client = fetch.New(fetch.Options{Timeout: 2 * f.timeout})
	}
	if f.now == nil {
		f.now = time.Now
	}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	return f, nil
}

// Busy returns the union of the feeds' busy intervals that reach into [from, to), sorted and
// merged, in loc (nil: UTC); see ParseICSBusy for how events are read. A caller that extends
// busy time by buffers should widen the window by them. Every error wraps
// ErrAvailabilityUnknown.
func (f *ICSFeeds) Busy(ctx context.Context, from, to time.Time, loc *time.Location) ([]Interval, error) {
	if loc == nil {
		loc = time.UTC
	}
	busy := make([][]Interval, len(f.feeds))
	errs := make([]error, len(f.feeds))
	var wg sync.WaitGroup
	for i, feed := range f.feeds {
		wg.Go(func() {
			cal, err := f.calendar(ctx, feed)
			if err != nil {
				errs[i] = fmt.Errorf("%s: %w", feed.name, err)
				return
			}
			b := cal.busy(from, to, loc)
			busy[i] = b.intervals
			// By position only: an event's content may be anyone's invitation.
			if fresh := cal.firstWarnings(b.overCap); len(fresh) > 0 {
				f.log.Warn("ics events over the expansion cap are busy over their whole span",
					"feed", feed.name, "events", fresh, "cap", maxICSOccurrences)
			}
			if b.coarsened && len(cal.firstWarnings([]int{0})) > 0 {
				f.log.Warn("ics feed has too many busy intervals; gaps too short for an appointment were closed",
					"feed", feed.name, "cap", maxICSIntervals)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAvailabilityUnknown, err)
	}
	return icsUnion(slices.Concat(busy...), loc), nil
}

// Refresh fetches every feed now, whatever the age of its copy, e.g. to warm the cache and
// report a broken feed at start-up.
func (f *ICSFeeds) Refresh(ctx context.Context) error {
	errs := make([]error, len(f.feeds))
	var wg sync.WaitGroup
	for i, feed := range f.feeds {
		wg.Go(func() {
			if _, err := f.wait(ctx, f.fetchShared(feed)); err != nil {
				errs[i] = fmt.Errorf("%s: %w", feed.name, err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("appointments.ICSFeeds.Refresh: %w", err)
	}
	return nil
}

// Close stops starting background fetches and waits for those under way, each bounded by
// Timeout; for shutdown. Busy still works after it, fetching when it has no usable copy.
func (f *ICSFeeds) Close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.waitBackground()
}

func (f *ICSFeeds) waitBackground() { f.background.Wait() }

// refreshInBackground starts a fetch of the feed, or joins the one in flight, without
// waiting for it.
func (f *ICSFeeds) refreshInBackground(feed *icsFeed) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	f.background.Add(1)
	done := f.fetchShared(feed)
	go func() {
		defer f.background.Done()
		<-done
	}()
}

// calendar returns a usable copy of the feed: a fresh one as is; a stale one as is, while a
// background fetch replaces it; none, by fetching it now.
func (f *ICSFeeds) calendar(ctx context.Context, feed *icsFeed) (*icsCalendar, error) {
	now := f.now()
	feed.mu.Lock()
	cal, age := feed.cal, now.Sub(feed.fetched)
	retrying := !feed.failed.IsZero() && now.Sub(feed.failed) < icsRetryAfter
	lastErr := feed.err
	feed.mu.Unlock()

	switch {
	case cal != nil && age < f.ttl:
		return cal, nil
	case cal != nil && age < f.maxStale:
		if !retrying {
			f.refreshInBackground(feed)
		}
		return cal, nil
	case retrying:
		return nil, lastErr
	}
	return f.wait(ctx, f.fetchShared(feed))
}

// fetchShared starts a fetch of the feed, or joins the one in flight.
func (f *ICSFeeds) fetchShared(feed *icsFeed) <-chan singleflight.Result {
	return f.fetches.DoChan(feed.key, func() (any, error) { return f.fetch(feed) })
}

func (f *ICSFeeds) wait(ctx context.Context, ch <-chan singleflight.Result) (*icsCalendar, error) {
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*icsCalendar), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// fetch downloads and parses the feed and stores the result. It runs detached from any
// caller's context, since callers share it; Timeout bounds it.
func (f *ICSFeeds) fetch(feed *icsFeed) (*icsCalendar, error) {
	began := f.now()
	cal, size, err := f.download(feed)
	feed.mu.Lock()
	defer feed.mu.Unlock()
	if err != nil {
		feed.failed, feed.err = began, err
		f.log.Warn("ics feed fetch failed", "feed", feed.name, "error", err.Error())
		return nil, err
	}
	feed.cal, feed.fetched, feed.failed, feed.err = cal, began, time.Time{}, nil
	f.log.Debug("ics feed fetched", "feed", feed.name, "bytes", size, "events", len(cal.events))
	return cal, nil
}

func (f *ICSFeeds) download(feed *icsFeed) (*icsCalendar, int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, feed.url, nil)
	if err != nil {
		return nil, 0, errors.New("cannot build the request")
	}
	req.Header.Set("Accept", "text/calendar")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, 0, f.transportError(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("server answered %s", resp.Status)
	}
	if resp.ContentLength > maxICSBytes {
		return nil, 0, fmt.Errorf("calendar is larger than %d bytes", maxICSBytes)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxICSBytes+1))
	if err != nil {
		return nil, 0, f.transportError(ctx, err)
	}
	cal, err := icsParse(body, maxICSRuleProbe)
	if err != nil {
		return nil, 0, err
	}
	return cal, len(body), nil
}

// transportError describes a failed request without its URL, which *url.Error would quote.
func (f *ICSFeeds) transportError(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no complete answer within %v", f.timeout)
	}
	if uerr, ok := errors.AsType[*url.Error](err); ok {
		err = uerr.Err
	}
	return fmt.Errorf("request failed: %w", err)
}
