package content

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sitetools/sitetools/internal/fetch"
)

// TestMain lets the crawler's default client reach the tests' loopback servers; a test
// that checks the refusal passes its own client.
func TestMain(m *testing.M) {
	defaultClient = fetch.New(fetch.Options{AllowPrivate: true, MaxBytes: MaxSitemapBytes + 1})
	os.Exit(m.Run())
}

func crawlTestPage(title string) string {
	return fmt.Sprintf(`<!doctype html><html lang="en"><head><title>%s</title></head><body>`+
		`<nav><a href="/">Home</a></nav><main><h1>%s</h1><p>Text of %s, long enough to be a paragraph of real content.</p></main>`+
		`<footer>Footer</footer></body></html>`, title, title, title)
}

// crawlTestSite serves pages, errors and a robots.txt, and records each
// request's path and User-Agent.
type crawlTestSite struct {
	srv      *httptest.Server
	mu       sync.Mutex
	requests []string
	agents   map[string]bool
}

func crawlTestNewSite(t *testing.T) *crawlTestSite {
	t.Helper()
	// Another host, which a redirect must not reach.
	other := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the crawler followed a redirect to another host: %s", r.URL)
	}))
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	other.Listener.Close()
	other.Listener = l
	other.Start()
	t.Cleanup(other.Close)
	s := &crawlTestSite{agents: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "User-agent: *\nDisallow: /star-only\n\n# ours\nUser-agent: SiteTools-Ingest\nDisallow: /private\nAllow: /private/open\n")
	})
	mux.HandleFunc("/page/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, crawlTestPage("Page "+strings.TrimPrefix(r.URL.Path, "/page/")))
	})
	for _, p := range []string{"/private", "/private/open", "/star-only"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, crawlTestPage(r.URL.Path))
		})
	}
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/gone", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusGone) })
	mux.HandleFunc("/error", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) })
	mux.HandleFunc("/busy", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTooManyRequests) })
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"title":"no"}`)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, crawlTestPage(strings.Repeat("big ", 1000)))
	})
	mux.HandleFunc("/big-chunked", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		for range 100 {
			fmt.Fprint(w, strings.Repeat("<p>chunk</p>", 10))
			w.(http.Flusher).Flush() // no Content-Length: the limit must hold while reading
		}
	})
	mux.HandleFunc("/latin1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=iso-8859-1")
		fmt.Fprint(w, "<html><head><title>Gr\xfc\xdfe</title></head><body><p>Sch\xf6n.</p></body></html>")
	})
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/", http.StatusFound)
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/page/moved", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // answers only when the client gives up
	})
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, r.URL.Path)
		s.agents[r.UserAgent()] = true
		s.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *crawlTestSite) requested() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(slices.Values(s.requests))
}

func TestFetch(t *testing.T) {
	for _, tc := range []struct {
		name          string
		crawler       Crawler
		paths         []string
		wantTitles    []string // of the documents, sorted
		wantStats     CrawlStats
		wantRequested []string // sorted; robots.txt included
		wantAgent     string
	}{
		{
			name:       "pages parsed, the rest skipped or failed, robots.txt honoured",
			paths:      []string{"/page/1", "/page/2", "/page/1", "/missing", "/gone", "/error", "/busy", "/json", "/big", "/big-chunked", "/away", "/moved", "/latin1", "/private", "/private/x", "/private/open", "/star-only"},
			crawler:    Crawler{MaxBytes: 1500},
			wantTitles: []string{"/private/open", "/star-only", "Grüße", "Page 1", "Page 2", "Page moved"},
			wantStats: CrawlStats{Pages: 6, Skipped: 7, Failed: 3,
				FailedURLs: []string{"/away", "/busy", "/error"}, GoneURLs: []string{"/gone", "/missing"}},
			wantRequested: []string{"/away", "/big", "/big-chunked", "/busy", "/error", "/gone", "/json", "/latin1", "/missing", "/moved", "/page/1", "/page/2", "/page/moved", "/private/open", "/robots.txt", "/star-only"},
			wantAgent:     DefaultUserAgent,
		},
		{
			name:          "robots.txt ignored on request, custom User-Agent",
			paths:         []string{"/private", "/page/3"},
			crawler:       Crawler{IgnoreRobots: true, UserAgent: "other-bot/2.0"},
			wantTitles:    []string{"/private", "Page 3"},
			wantStats:     CrawlStats{Pages: 2},
			wantRequested: []string{"/page/3", "/private"},
			wantAgent:     "other-bot/2.0",
		},
		{
			name:          "per-request timeout",
			paths:         []string{"/slow", "/page/4"},
			crawler:       Crawler{Timeout: 500 * time.Millisecond, IgnoreRobots: true},
			wantTitles:    []string{"Page 4"},
			wantStats:     CrawlStats{Pages: 1, Failed: 1, FailedURLs: []string{"/slow"}},
			wantRequested: []string{"/page/4", "/slow"},
			wantAgent:     DefaultUserAgent,
		},
		{
			name:      "the default client fetches nothing from a loopback address",
			paths:     []string{"/page/5", "/away"},
			crawler:   Crawler{Client: fetch.New(fetch.Options{})},
			wantStats: CrawlStats{Skipped: 2},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			site := crawlTestNewSite(t)
			var urls []string
			for _, p := range tc.paths {
				urls = append(urls, site.srv.URL+p)
			}
			distinct := map[string]bool{}
			for _, u := range urls {
				distinct[u] = true
			}
			var progress []int
			tc.crawler.Progress = func(done, total int) {
				if total != len(distinct) {
					t.Errorf("progress total %d, want %d", total, len(distinct))
				}
				progress = append(progress, done)
			}
			var titles []string
			stats, err := tc.crawler.Fetch(context.Background(), urls, func(d *Document) error {
				titles = append(titles, d.Title)
				if !strings.HasPrefix(d.URL, site.srv.URL+"/") || d.Path != strings.TrimPrefix(d.URL, site.srv.URL) {
					t.Errorf("document URL %q, path %q", d.URL, d.Path)
				}
				if strings.Contains(d.Sections[0].Text, "Home") || strings.Contains(d.Sections[0].Text, "Footer") {
					t.Errorf("%s: navigation or footer in the text: %q", d.URL, d.Sections[0].Text)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(titles)
			if diff := cmp.Diff(tc.wantTitles, titles); diff != "" {
				t.Errorf("titles (-want +got):\n%s", diff)
			}
			for _, urls := range [][]string{stats.FailedURLs, stats.GoneURLs} {
				for i, u := range urls {
					urls[i] = strings.TrimPrefix(u, site.srv.URL)
				}
			}
			if (stats.BytesFetched > 0) != (stats.Pages > 0) {
				t.Errorf("%d bytes fetched for %d pages", stats.BytesFetched, stats.Pages)
			}
			if diff := cmp.Diff(tc.wantStats, stats, cmpopts.IgnoreFields(CrawlStats{}, "BytesFetched")); diff != "" {
				t.Errorf("stats (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantRequested, site.requested()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			site.mu.Lock()
			wantAgents := map[string]bool{}
			if tc.wantAgent != "" {
				wantAgents[tc.wantAgent] = true
			}
			if diff := cmp.Diff(wantAgents, site.agents); diff != "" {
				t.Errorf("user agents (-want +got):\n%s", diff)
			}
			site.mu.Unlock()
			total := stats.Pages + stats.Skipped + stats.Failed
			if len(progress) != total || !slices.IsSorted(progress) || progress[len(progress)-1] != len(distinct) {
				t.Errorf("progress calls %v, want 1…%d", progress, total)
			}
		})
	}
}

func TestFetchConcurrency(t *testing.T) {
	for _, tc := range []struct {
		name        string
		concurrency int
		want        int
	}{
		{name: "explicit", concurrency: 3, want: 3},
		{name: "default", concurrency: 0, want: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				inFlight, most atomic.Int32
				gate           = make(chan struct{})
				open           sync.Once
			)
			// Every request waits until `want` are in flight together: a
			// crawler with less concurrency times out, one with more shows
			// in `most`.
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := inFlight.Add(1)
				defer inFlight.Add(-1)
				for {
					m := most.Load()
					if n <= m || most.CompareAndSwap(m, n) {
						break
					}
				}
				if n >= int32(tc.want) {
					open.Do(func() { close(gate) })
				}
				select {
				case <-gate:
				case <-r.Context().Done():
					return
				}
				w.Header().Set("Content-Type", "text/html")
				fmt.Fprint(w, crawlTestPage(r.URL.Path))
			}))
			t.Cleanup(srv.Close)
			var urls []string
			for i := range 20 {
				urls = append(urls, fmt.Sprintf("%s/p%d", srv.URL, i))
			}
			c := Crawler{Concurrency: tc.concurrency, IgnoreRobots: true, Timeout: 10 * time.Second}
			var inFn atomic.Int32
			docs := 0
			stats, err := c.Fetch(context.Background(), urls, func(d *Document) error {
				if inFn.Add(1) != 1 {
					t.Error("fn called concurrently")
				}
				runtime.Gosched()
				docs++ // unsynchronised on purpose: -race reports concurrent calls
				inFn.Add(-1)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if stats.Pages != 20 || docs != 20 {
				t.Errorf("%d pages, %d fn calls; want 20", stats.Pages, docs)
			}
			if got := most.Load(); got != int32(tc.want) {
				t.Errorf("at most %d requests in flight, want %d", got, tc.want)
			}
		})
	}
}

func TestFetchStops(t *testing.T) {
	site := crawlTestNewSite(t)
	var urls []string
	for i := range 30 {
		urls = append(urls, fmt.Sprintf("%s/page/%d", site.srv.URL, i))
	}
	stop := errors.New("stop")
	for _, tc := range []struct {
		name      string
		crawler   Crawler
		ctx       func() (context.Context, context.CancelFunc)
		fn        func(cancel context.CancelFunc) func(*Document) error
		wantErr   error
		wantCalls int
	}{
		{
			name: "fn fails",
			ctx:  func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			fn: func(context.CancelFunc) func(*Document) error {
				return func(*Document) error { return stop }
			},
			wantErr: stop, wantCalls: 1,
		},
		{
			name: "context cancelled during the crawl",
			ctx:  func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			fn: func(cancel context.CancelFunc) func(*Document) error {
				return func(*Document) error { cancel(); return nil }
			},
			wantErr: context.Canceled, wantCalls: 1,
		},
		{
			name: "context cancelled before",
			ctx: func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx, cancel
			},
			fn: func(context.CancelFunc) func(*Document) error {
				return func(*Document) error { return nil }
			},
			wantErr: context.Canceled, wantCalls: 0,
		},
		{
			name:    "more URLs than MaxPages",
			crawler: Crawler{MaxPages: 29},
			ctx:     func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			fn: func(context.CancelFunc) func(*Document) error {
				return func(*Document) error { return nil }
			},
			wantCalls: 0,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := tc.ctx()
			defer cancel()
			calls := 0
			fn := tc.fn(cancel)
			_, err := tc.crawler.Fetch(ctx, urls, func(d *Document) error { calls++; return fn(d) })
			if err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
			if calls != tc.wantCalls {
				t.Errorf("fn called %d times, want %d", calls, tc.wantCalls)
			}
		})
	}
}

func TestCrawlParseRobots(t *testing.T) {
	const ua = "sitetools-ingest/1.0 (+https://github.com/sitetools/sitetools)"
	for _, tc := range []struct {
		name   string
		robots string
		path   string
		want   bool
	}{
		{name: "empty file", robots: "", path: "/a", want: true},
		{name: "star group", robots: "User-agent: *\nDisallow: /admin\n", path: "/admin/x", want: false},
		{name: "prefix only", robots: "User-agent: *\nDisallow: /admin\n", path: "/ad", want: true},
		{name: "our group replaces star", robots: "User-agent: *\nDisallow: /\n\nUser-agent: sitetools-ingest\nDisallow: /tmp\n", path: "/a", want: true},
		{name: "our group applies", robots: "User-agent: *\nDisallow: /\n\nUser-agent: sitetools-ingest\nDisallow: /tmp\n", path: "/tmp/x", want: false},
		{name: "other bots' groups ignored", robots: "User-agent: googlebot\nDisallow: /\n", path: "/a", want: true},
		{name: "group of several agents", robots: "User-agent: googlebot\nUser-agent: SITETOOLS-INGEST\nDisallow: /x\n", path: "/x", want: false},
		{name: "agents after rules start a new group", robots: "User-agent: sitetools-ingest\nDisallow: /x\nUser-agent: other\nDisallow: /y\n", path: "/y", want: true},
		{name: "longest match wins", robots: "User-agent: *\nDisallow: /docs\nAllow: /docs/public\n", path: "/docs/public/a", want: true},
		{name: "longest match wins the other way", robots: "User-agent: *\nAllow: /docs\nDisallow: /docs/private\n", path: "/docs/private", want: false},
		{name: "allow wins a tie", robots: "User-agent: *\nDisallow: /a\nAllow: /a\n", path: "/a", want: true},
		{name: "wildcard", robots: "User-agent: *\nDisallow: /*.pdf$\n", path: "/files/x.pdf", want: false},
		{name: "end anchor", robots: "User-agent: *\nDisallow: /*.pdf$\n", path: "/files/x.pdf?dl=1", want: true},
		{name: "query matched", robots: "User-agent: *\nDisallow: /search?\n", path: "/search?q=x", want: false},
		{name: "empty disallow allows", robots: "User-agent: *\nDisallow:\n", path: "/a", want: true},
		{name: "comments and CRLF", robots: "User-agent: * # all\r\nDisallow: /b # not b\r\n", path: "/b", want: false},
		{name: "robots.txt itself always allowed", robots: "User-agent: *\nDisallow: /\n", path: "/robots.txt", want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, query, _ := strings.Cut(tc.path, "?")
			if got := crawlParseRobots([]byte(tc.robots), ua).allowed(path, query); got != tc.want {
				t.Errorf("allowed(%q) = %v, want %v", tc.path, got, tc.want)
			}
		})
	}
}

func TestCrawlOrigin(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://Example.COM/a?b#c", "https://example.com"},
		{"https://example.com:443/", "https://example.com"},
		{"http://example.com:80/", "http://example.com"},
		{"http://example.com:8080/", "http://example.com:8080"},
		{"HTTP://[::1]:8080/x", "http://[::1]:8080"},
		{"/relative", ""},
		{"mailto:a@example.com", ""},
		{"ftp://example.com/", ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if got := crawlOrigin(tc.in); got != tc.want {
				t.Errorf("crawlOrigin(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestFetchRobotsOnce: robots.txt is asked for once per crawl, also when the site has
// none (404) or cannot serve it (5xx), which allow every page; and the pages of one
// origin share a few connections.
func TestFetchRobotsOnce(t *testing.T) {
	for _, status := range []int{http.StatusOK, http.StatusNotFound, http.StatusServiceUnavailable} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			var robots, conns atomic.Int32
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/robots.txt" {
					robots.Add(1)
					w.WriteHeader(status)
					fmt.Fprint(w, "User-agent: *\nDisallow: /private\n")
					return
				}
				w.Header().Set("Content-Type", "text/html")
				fmt.Fprint(w, crawlTestPage(r.URL.Path))
			}))
			srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
				if st == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			t.Cleanup(srv.Close)
			urls := make([]string, 200)
			for i := range urls {
				urls[i] = fmt.Sprintf("%s/p%d", srv.URL, i)
			}
			c := &Crawler{Client: fetch.New(fetch.Options{AllowPrivate: true})}
			st, err := c.Fetch(context.Background(), urls, func(*Document) error { return nil })
			if err != nil || st.Pages != len(urls) {
				t.Fatalf("Fetch: %+v, %v; want %d pages", st, err, len(urls))
			}
			if n := robots.Load(); n != 1 {
				t.Errorf("robots.txt asked for %d times for %d pages; want once", n, len(urls))
			}
			// The crawler's 4 workers, one for robots.txt when its body is left unread, and
			// a few the transport dials for a waiting request while another frees up.
			if n := conns.Load(); n > 10 {
				t.Errorf("%d connections for %d pages; want at most 10", n, len(urls))
			}
		})
	}
}
