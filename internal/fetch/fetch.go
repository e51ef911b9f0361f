// Package fetch is the one HTTP client for everything sitetools fetches from elsewhere:
// the crawler's pages, sitemaps and robots.txt, and the iCalendar feeds. Those URLs come
// from configuration, and from what the fetched documents and their servers say (sitemap
// entries, redirects), so the client treats every hop as untrusted:
//
//   - It connects to public addresses only. Loopback, private (RFC 1918, fc00::/7),
//     link-local (including the cloud metadata address 169.254.169.254), shared (CGNAT,
//     100.64.0.0/10), unspecified, multicast and reserved addresses are refused when the
//     connection is made, after name resolution, so a name that resolves to one (or is
//     rebound to one between two requests) is refused too. Options.AllowPrivate
//     (FETCH_ALLOW_PRIVATE=true) lifts this, and Options.Allow (FETCH_ALLOW_PRIVATE as a
//     list of prefixes) lifts it for some ranges, for a site or calendar on the operator's
//     own network.
//   - Redirects stay on the host of the first request, never go from https to http, and
//     stop after MaxRedirects.
//   - The whole exchange, body included, is bounded by Timeout, and the body by MaxBytes.
//   - It uses no proxy from the environment: a proxy would make the address check moot.
package fetch

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Defaults of Options.
const (
	DefaultTimeout      = 30 * time.Second
	DefaultMaxRedirects = 5
	DefaultMaxBytes     = 16 << 20
)

// Options configures New. The zero value is the safe default.
type Options struct {
	// AllowPrivate allows connections to loopback, private, link-local and other
	// non-public addresses (FETCH_ALLOW_PRIVATE=true).
	AllowPrivate bool
	// Allow lists non-public ranges that are allowed all the same (FETCH_ALLOW_PRIVATE
	// given as addresses or CIDR prefixes), e.g. the intranet host a site is crawled from.
	Allow []netip.Prefix
	// Timeout bounds one request from dialling to the end of its body; 0 means
	// DefaultTimeout. Callers may set shorter deadlines through the request's context.
	Timeout time.Duration
	// MaxRedirects is how many redirects one request may follow; 0 means
	// DefaultMaxRedirects, a negative number none.
	MaxRedirects int
	// MaxBytes bounds a response body; reading past it fails with ErrTooLarge. 0 means
	// DefaultMaxBytes. Callers keep their own, usually smaller, limits.
	MaxBytes int64
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver *net.Resolver
}

// Errors a request can fail with, wrapped in *url.Error and the like; test with errors.Is.
var (
	ErrBlockedAddress  = errors.New("address is not public (loopback, private, link-local, shared or reserved); set FETCH_ALLOW_PRIVATE=true to allow it")
	ErrOffHostRedirect = errors.New("redirect to another host")
	ErrDowngrade       = errors.New("redirect from https to http")
	ErrTooManyRedirect = errors.New("too many redirects")
	ErrTooLarge        = errors.New("response body is over the size limit")
)

// New returns a client with the rules of the package. Clients are safe for concurrent use
// and meant to be shared: each keeps a pool of connections.
func New(o Options) *http.Client {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxRedirects == 0 {
		o.MaxRedirects = DefaultMaxRedirects
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Resolver: o.Resolver}
	if !o.AllowPrivate {
		dialer.Control = refuseNonPublic(o.Allow)
	}
	// A crawl asks one host for page after page from several workers: with Go's default
	// of 2 idle connections a host, the others' were closed after each request and
	// dialled again (on a real site, a TLS handshake a page).
	transport := &http.Transport{
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           32,
		MaxIdleConnsPerHost:    32,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  o.Timeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{
		Transport:     limitBody{transport, o.MaxBytes},
		Timeout:       o.Timeout,
		CheckRedirect: checkRedirect(o.MaxRedirects),
	}
}

// checkRedirect keeps redirects on the first request's host and scheme level.
func checkRedirect(limit int) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if len(via) > limit {
			return fmt.Errorf("%w (more than %d)", ErrTooManyRedirect, max(limit, 0))
		}
		if !strings.EqualFold(req.URL.Hostname(), via[0].URL.Hostname()) {
			return ErrOffHostRedirect
		}
		if via[len(via)-1].URL.Scheme == "https" && req.URL.Scheme != "https" {
			return ErrDowngrade
		}
		return nil
	}
}

// refuseNonPublic returns the dialer's Control: it runs for every address a connection is
// attempted to, after resolution, and refuses those neither public nor allowed.
func refuseNonPublic(allow []netip.Prefix) func(string, string, syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("%w: cannot read the address", ErrBlockedAddress)
		}
		addr := ap.Addr().Unmap()
		if Public(addr) || slices.ContainsFunc(allow, func(p netip.Prefix) bool { return p.Contains(addr) }) {
			return nil
		}
		return ErrBlockedAddress
	}
}

// limitBody bounds every response body of a transport.
type limitBody struct {
	rt  http.RoundTripper
	max int64
}

func (l limitBody) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > l.max {
		resp.Body.Close()
		return nil, fmt.Errorf("%w (%d bytes declared, %d allowed)", ErrTooLarge, resp.ContentLength, l.max)
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, left: l.max}
	return resp, nil
}

// limitedBody fails with ErrTooLarge once more than left bytes arrive, rather than end
// early as io.LimitReader would: a cut-off document must not pass for a whole one.
type limitedBody struct {
	io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, ErrTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n + int(b.left), ErrTooLarge
	}
	return n, err
}
