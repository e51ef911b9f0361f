package appointments

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sitetools/sitetools/internal/fetch"
)

// testClock is the injected clock of the feed tests.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Special statuses of icsTestServer.
const (
	hangUp  = -1 // drop the connection without an answer
	stall   = -2 // never answer; the client gives up
	tooLong = -3 // 200 with a body one byte over the limit, without Content-Length
)

// icsTestServer serves a calendar feed and counts the requests it gets.
type icsTestServer struct {
	*httptest.Server
	requests atomic.Int32

	mu     sync.Mutex
	status int
	body   []byte
	gate   chan struct{} // when set, requests wait until it is closed
}

func newICSTestServer(t *testing.T, body []byte) *icsTestServer {
	s := &icsTestServer{status: http.StatusOK, body: body}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		s.mu.Lock()
		status, body, gate := s.status, s.body, s.gate
		s.mu.Unlock()
		if gate != nil {
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		switch status {
		case hangUp:
			panic(http.ErrAbortHandler)
		case stall:
			<-r.Context().Done()
			return
		case tooLong:
			w.WriteHeader(http.StatusOK)
			chunk := bytes.Repeat([]byte("X"), 1<<16)
			for n := 0; n <= maxICSBytes; n += len(chunk) {
				if _, err := w.Write(chunk[:min(len(chunk), maxICSBytes+1-n)]); err != nil {
					return
				}
			}
			return
		}
		w.Header().Set("Content-Type", "text/calendar; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(status)
		w.Write(body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *icsTestServer) serve(status int, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.body = status, body
}

// hold makes requests wait until the returned function is called (or the test ends).
func (s *icsTestServer) hold(t *testing.T) (release func()) {
	gate := make(chan struct{})
	s.mu.Lock()
	s.gate = gate
	s.mu.Unlock()
	release = sync.OnceFunc(func() { close(gate) })
	t.Cleanup(release)
	return release
}

var (
	feedFrom, feedTo = at("2026-03-01T00:00Z"), at("2026-04-01T00:00Z")
	feedA            = icsCalendarOf("DTSTART:20260302T090000Z\nDTEND:20260302T100000Z\nSUMMARY:feed A")
	feedB            = icsCalendarOf("DTSTART:20260302T110000Z\nDTEND:20260302T120000Z\nSUMMARY:feed B")
	busyA            = []Interval{{at("2026-03-02T09:00Z"), at("2026-03-02T10:00Z")}}
	busyB            = []Interval{{at("2026-03-02T11:00Z"), at("2026-03-02T12:00Z")}}
)

func newTestFeeds(t *testing.T, urls []string, clock *testClock, opts ICSFeedOptions) *ICSFeeds {
	t.Helper()
	if clock != nil {
		opts.Now = clock.Now
	}
	if opts.Client == nil {
		// The test servers are on loopback.
		opts.Client = fetch.New(fetch.Options{AllowPrivate: true})
	}
	f, err := NewICSFeeds(urls, opts)
	if err != nil {
		t.Fatalf("NewICSFeeds: %v", err)
	}
	t.Cleanup(f.Close)
	return f
}

func TestNewICSFeeds(t *testing.T) {
	const secret = "s3cr3t-token"
	for _, tt := range []struct {
		name    string
		urls    []string
		opts    ICSFeedOptions
		wantErr []string // each must appear; nil means no error
	}{
		{name: "http and https, with user info and query", urls: []string{"https://cal.example.com/a.ics", "http://user:" + secret + "@cal.example.com/b.ics?k=" + secret}},
		{name: "no feeds", urls: nil},
		{name: "MaxStale equal to TTL", urls: []string{"https://cal.example.com/a.ics"}, opts: ICSFeedOptions{TTL: time.Minute, MaxStale: time.Minute}},
		{name: "webcal", urls: []string{"webcal://cal.example.com/" + secret + ".ics"}, wantErr: []string{"ics feed 1: scheme must be http or https"}},
		{name: "file", urls: []string{"file:///etc/" + secret}, wantErr: []string{"ics feed 1: scheme must be http or https"}},
		{name: "empty entry", urls: []string{"https://cal.example.com/a.ics", " "}, wantErr: []string{"ics feed 2: empty URL"}},
		{name: "not a URL", urls: []string{"https://cal.example.com/%zz" + secret}, wantErr: []string{"ics feed 1: not a valid URL"}},
		{name: "no host", urls: []string{"https:///" + secret + ".ics"}, wantErr: []string{"ics feed 1: URL has no host"}},
		{name: "twice the same", urls: []string{"https://cal.example.com/a.ics", "https://cal.example.com/a.ics"}, wantErr: []string{"ics feed 2: same URL as an earlier feed"}},
		{name: "negative durations", urls: []string{"https://cal.example.com/a.ics"}, opts: ICSFeedOptions{Timeout: -1, TTL: -time.Second},
			wantErr: []string{"Timeout: -1ns is negative", "TTL: -1s is negative"}},
		{name: "MaxStale below TTL", urls: []string{"https://cal.example.com/a.ics"}, opts: ICSFeedOptions{TTL: time.Hour, MaxStale: time.Minute},
			wantErr: []string{"MaxStale (1m0s) is less than TTL (1h0m0s)"}},
		{name: "every problem at once", urls: []string{"ftp://x/" + secret, ""}, opts: ICSFeedOptions{MaxStale: time.Minute},
			wantErr: []string{"ics feed 1: scheme", "ics feed 2: empty URL", "MaxStale (1m0s) is less than TTL (5m0s)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, err := NewICSFeeds(tt.urls, tt.opts)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("NewICSFeeds: %v", err)
				}
				if len(f.feeds) != len(tt.urls) {
					t.Errorf("%d feeds; want %d", len(f.feeds), len(tt.urls))
				}
				return
			}
			if err == nil {
				t.Fatal("NewICSFeeds succeeded; want an error")
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q shows the URL's secret", err)
			}
		})
	}
}

func TestICSFeedsBusyCache(t *testing.T) {
	type step struct {
		advance  time.Duration // clock advance before the call
		status   int           // what the server answers from now on
		body     []byte
		want     []Interval
		wantErr  string // a part of the error; "" for success
		requests int32  // requests the server has had after the call
	}
	notICS := []byte("<html>Please sign in</html>")
	for _, tt := range []struct {
		name    string
		timeout time.Duration
		steps   []step
	}{{
		name: "a fresh copy is used without asking the server, even while it fails",
		steps: []step{
			{status: 200, body: feedA, want: busyA, requests: 1},
			{advance: 4 * time.Minute, status: 503, want: busyA, requests: 1},
		},
	}, {
		name: "a stale copy is used while one background fetch replaces it",
		steps: []step{
			{status: 200, body: feedA, want: busyA, requests: 1},
			{advance: 6 * time.Minute, status: 200, body: feedB, want: busyA, requests: 2},
			{want: busyB, requests: 2},
		},
	}, {
		name: "a stale copy outlives failed fetches until MaxStale, with a pause between attempts",
		steps: []step{
			{status: 200, body: feedA, want: busyA, requests: 1},
			{advance: 6 * time.Minute, status: 503, want: busyA, requests: 2},
			{advance: 10 * time.Second, want: busyA, requests: 2},    // within the pause
			{advance: time.Minute, want: busyA, requests: 3},         // after it
			{advance: 55 * time.Minute, wantErr: "503", requests: 4}, // 62 minutes old
			{advance: time.Second, status: 200, body: feedB, wantErr: "503", requests: 4},
			{advance: 30 * time.Second, want: busyB, requests: 5},
		},
	}, {
		name: "a body that is not a calendar does not replace the copy",
		steps: []step{
			{status: 200, body: feedA, want: busyA, requests: 1},
			{advance: 6 * time.Minute, status: 200, body: notICS, want: busyA, requests: 2},
			{advance: 55 * time.Minute, wantErr: "not an iCalendar feed", requests: 3},
		},
	}, {
		name: "an error status without a copy",
		steps: []step{
			{status: 500, wantErr: "server answered 500 Internal Server Error", requests: 1},
		},
	}, {
		name: "a dropped connection without a copy",
		steps: []step{
			{status: hangUp, wantErr: "request failed", requests: 1},
		},
	}, {
		name:    "no answer within the timeout",
		timeout: 50 * time.Millisecond,
		steps: []step{
			{status: stall, wantErr: "no complete answer within 50ms", requests: 1},
		},
	}, {
		name: "a body over the limit, without Content-Length",
		steps: []step{
			{status: tooLong, wantErr: "calendar is larger than 5242880 bytes", requests: 1},
		},
	}, {
		name: "a body over the limit, declared by Content-Length",
		steps: []step{
			{status: 200, body: bytes.Repeat([]byte("X"), maxICSBytes+1), wantErr: "calendar is larger than 5242880 bytes", requests: 1},
		},
	}, {
		name: "a feed that recovers after the pause",
		steps: []step{
			{status: 502, wantErr: "502", requests: 1},
			{advance: 29 * time.Second, status: 200, body: feedA, wantErr: "502", requests: 1},
			{advance: time.Second, want: busyA, requests: 2},
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newICSTestServer(t, nil)
			clock := &testClock{t: at("2026-03-01T00:00Z")}
			f := newTestFeeds(t, []string{srv.URL + "/private/basic.ics"}, clock, ICSFeedOptions{Timeout: tt.timeout})
			for i, s := range tt.steps {
				clock.Advance(s.advance)
				if s.status != 0 {
					srv.serve(s.status, s.body)
				}
				got, err := f.Busy(context.Background(), feedFrom, feedTo, time.UTC)
				f.waitBackground() // let a background fetch finish before looking
				if s.wantErr != "" {
					if !errors.Is(err, ErrAvailabilityUnknown) || !strings.Contains(err.Error(), s.wantErr) {
						t.Errorf("step %d: Busy = %v, %v; want an ErrAvailabilityUnknown containing %q", i, got, err, s.wantErr)
					}
				} else if err != nil {
					t.Errorf("step %d: Busy: %v", i, err)
				} else if diff := cmp.Diff(showIntervals(s.want), showIntervals(got)); diff != "" {
					t.Errorf("step %d: busy (-want +got):\n%s", i, diff)
				}
				if n := srv.requests.Load(); n != s.requests {
					t.Errorf("step %d: server had %d requests; want %d", i, n, s.requests)
				}
			}
		})
	}
}

func TestICSFeedsUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/basic.ics"
	srv.Close() // nothing listens there any more
	f := newTestFeeds(t, []string{url}, nil, ICSFeedOptions{})
	got, err := f.Busy(context.Background(), feedFrom, feedTo, time.UTC)
	if !errors.Is(err, ErrAvailabilityUnknown) {
		t.Fatalf("Busy = %v, %v; want ErrAvailabilityUnknown", got, err)
	}
	if got != nil {
		t.Errorf("Busy returned intervals %v with its error", got)
	}
}

// TestICSFeedsSingleFlight: concurrent queries make one request per feed, whether they wait
// for it (no copy) or not (a stale copy).
func TestICSFeedsSingleFlight(t *testing.T) {
	const callers = 20
	for _, tt := range []struct {
		name  string
		stale bool
	}{{"no copy: callers share one fetch", false}, {"stale copy: callers start one background fetch", true}} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newICSTestServer(t, feedA)
			clock := &testClock{t: at("2026-03-01T00:00Z")}
			f := newTestFeeds(t, []string{srv.URL}, clock, ICSFeedOptions{})
			// Callers without a copy wait for the fetch; with a stale copy they get the copy.
			wantDuring := busyB
			if tt.stale {
				if _, err := f.Busy(context.Background(), feedFrom, feedTo, time.UTC); err != nil {
					t.Fatal(err)
				}
				clock.Advance(6 * time.Minute)
				wantDuring = busyA
			}
			srv.serve(200, feedB)
			release := srv.hold(t)

			results := make([][]Interval, callers)
			errs := make([]error, callers)
			var wg sync.WaitGroup
			for i := range callers {
				wg.Go(func() { results[i], errs[i] = f.Busy(context.Background(), feedFrom, feedTo, time.UTC) })
			}
			if tt.stale {
				wg.Wait() // all callers are answered from the copy while the fetch is held
			}
			release()
			wg.Wait()
			f.waitBackground()

			for i := range callers {
				if errs[i] != nil {
					t.Fatalf("caller %d: %v", i, errs[i])
				}
				if diff := cmp.Diff(showIntervals(wantDuring), showIntervals(results[i])); diff != "" {
					t.Errorf("caller %d (-want +got):\n%s", i, diff)
				}
			}
			wantRequests := int32(1)
			if tt.stale {
				wantRequests = 2
			}
			if n := srv.requests.Load(); n != wantRequests {
				t.Errorf("server had %d requests; want %d", n, wantRequests)
			}
			got, err := f.Busy(context.Background(), feedFrom, feedTo, time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(showIntervals(busyB), showIntervals(got)); diff != "" {
				t.Errorf("after the fetch (-want +got):\n%s", diff)
			}
			if n := srv.requests.Load(); n != wantRequests {
				t.Errorf("server had %d requests after the fetch; want still %d", n, wantRequests)
			}
		})
	}
}

func TestICSFeedsUnion(t *testing.T) {
	overlapping := icsCalendarOf("DTSTART:20260302T093000Z\nDTEND:20260302T103000Z")
	for _, tt := range []struct {
		name    string
		bodies  [][]byte
		status2 int
		want    []Interval
		wantErr string
	}{{
		name:   "intervals of all feeds, merged",
		bodies: [][]byte{feedA, feedB, overlapping},
		want: []Interval{
			{at("2026-03-02T10:00+01:00"), at("2026-03-02T11:30+01:00")},
			{at("2026-03-02T12:00+01:00"), at("2026-03-02T13:00+01:00")},
		},
	}, {
		name:    "one unreadable feed makes all unknown",
		bodies:  [][]byte{feedA, feedB, overlapping},
		status2: 500,
		wantErr: "ics feed 2 (127.0.0.1:",
	}} {
		t.Run(tt.name, func(t *testing.T) {
			var urls []string
			for i, body := range tt.bodies {
				srv := newICSTestServer(t, body)
				if i == 1 && tt.status2 != 0 {
					srv.serve(tt.status2, nil)
				}
				urls = append(urls, srv.URL+"/feed-"+strconv.Itoa(i)+"-secret-path.ics")
			}
			f := newTestFeeds(t, urls, nil, ICSFeedOptions{})
			got, err := f.Busy(context.Background(), feedFrom, feedTo, berlin)
			if tt.wantErr != "" {
				if !errors.Is(err, ErrAvailabilityUnknown) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Busy = %v, %v; want ErrAvailabilityUnknown containing %q", got, err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "secret-path") {
					t.Errorf("error %q shows a feed's path", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(showIntervals(tt.want), showIntervals(got)); diff != "" {
				t.Errorf("busy (-want +got):\n%s", diff)
			}
		})
	}
}

func TestICSFeedsCallerContext(t *testing.T) {
	srv := newICSTestServer(t, feedA)
	srv.hold(t)
	f := newTestFeeds(t, []string{srv.URL}, nil, ICSFeedOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got, err := f.Busy(ctx, feedFrom, feedTo, time.UTC)
	if !errors.Is(err, ErrAvailabilityUnknown) || !errors.Is(err, context.Canceled) {
		t.Errorf("Busy = %v, %v; want ErrAvailabilityUnknown and context.Canceled", got, err)
	}
}

func TestICSFeedsRefresh(t *testing.T) {
	good := newICSTestServer(t, feedA)
	bad := newICSTestServer(t, nil)
	bad.serve(404, nil)
	clock := &testClock{t: at("2026-03-01T00:00Z")}
	f := newTestFeeds(t, []string{good.URL, bad.URL}, clock, ICSFeedOptions{})

	err := f.Refresh(context.Background())
	if err == nil || !strings.Contains(err.Error(), "ics feed 2") || strings.Contains(err.Error(), "ics feed 1") {
		t.Errorf("Refresh = %v; want an error naming feed 2 only", err)
	}
	// Refresh fetches whatever the age of the copy.
	if err := f.Refresh(context.Background()); err == nil {
		t.Error("second Refresh succeeded; want feed 2's error again")
	}
	if n := good.requests.Load(); n != 2 {
		t.Errorf("good feed had %d requests; want 2", n)
	}
}

// TestICSFeedsLogs: logs name a feed by number and host, never its path, credentials or
// any event content.
func TestICSFeedsLogs(t *testing.T) {
	const marker = "EVENT-MARKER-5521"
	srv := newICSTestServer(t, icsCalendarOf("DTSTART:20260302T090000Z\nDTEND:20260302T100000Z\nSUMMARY:"+marker+"\nATTENDEE:mailto:"+marker+"@example.com"))
	var logs bytes.Buffer
	clock := &testClock{t: at("2026-03-01T00:00Z")}
	u := strings.Replace(srv.URL, "http://", "http://alice:pa55word@", 1) + "/calendar/ical/private-f00d/basic.ics?token=t0k3n"
	f := newTestFeeds(t, []string{u}, clock, ICSFeedOptions{
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})

	if _, err := f.Busy(context.Background(), feedFrom, feedTo, time.UTC); err != nil {
		t.Fatal(err)
	}
	srv.serve(200, []byte("BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nSUMMARY:"+marker+"\r\nDTSTART:broken\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"))
	clock.Advance(2 * time.Hour)
	_, err := f.Busy(context.Background(), feedFrom, feedTo, time.UTC)
	if !errors.Is(err, ErrAvailabilityUnknown) {
		t.Fatalf("Busy after a broken fetch: %v; want ErrAvailabilityUnknown", err)
	}

	out := logs.String()
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, want := range []string{"ics feed fetched", "ics feed fetch failed", "ics feed 1 (" + host + ")", "event 1: DTSTART"} {
		if !strings.Contains(out, want) {
			t.Errorf("logs lack %q:\n%s", want, out)
		}
	}
	for _, leak := range []string{marker, "alice", "pa55word", "private-f00d", "basic.ics", "t0k3n", "broken"} {
		if strings.Contains(out, leak) {
			t.Errorf("logs show %q:\n%s", leak, out)
		}
		if strings.Contains(err.Error(), leak) {
			t.Errorf("error %q shows %q", err, leak)
		}
	}
}

// TestICSFeedsHostileInvitation: an invitation that repeats every second, beside a normal
// feed and a normal event of its own feed, blocks its own span only; the availability stays
// known, and the log names the event by position, once per fetched copy.
func TestICSFeedsHostileInvitation(t *testing.T) {
	const marker = "INVITE-MARKER-0417"
	hostile := icsCalendarOf(
		"DTSTART:20260303T090000Z\nDTEND:20260303T100000Z",
		"DTSTART:20260310T080000Z\nDURATION:PT1S\nRRULE:FREQ=SECONDLY;UNTIL=20260310T160000Z\nSUMMARY:"+marker,
	)
	normal, attacked := newICSTestServer(t, feedA), newICSTestServer(t, hostile)
	var logs bytes.Buffer
	f := newTestFeeds(t, []string{normal.URL, attacked.URL}, &testClock{t: at("2026-03-01T00:00Z")}, ICSFeedOptions{
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	want := []Interval{busyA[0],
		{at("2026-03-03T09:00Z"), at("2026-03-03T10:00Z")},
		{at("2026-03-10T08:00Z"), time.Date(2026, 3, 10, 16, 0, 1, 0, time.UTC)},
	}
	for range 2 {
		got, err := f.Busy(context.Background(), feedFrom, feedTo, time.UTC)
		if err != nil {
			t.Fatalf("Busy: %v; want the hostile event to fail closed on its own", err)
		}
		if diff := cmp.Diff(showIntervals(want), showIntervals(got)); diff != "" {
			t.Errorf("busy (-want +got):\n%s", diff)
		}
	}
	out := logs.String()
	if n := strings.Count(out, "over the expansion cap"); n != 1 {
		t.Errorf("%d warnings about the cap; want 1:\n%s", n, out)
	}
	if !strings.Contains(out, "ics feed 2 (") || !strings.Contains(out, "events=[2]") {
		t.Errorf("warning does not name feed 2, event 2:\n%s", out)
	}
	if strings.Contains(out, marker) || strings.Contains(out, "SECONDLY") {
		t.Errorf("log shows event content:\n%s", out)
	}
}

// TestICSFeedsPrivateAddress: by default a feed on a loopback (or any non-public) address
// is not fetched, and the error says how to allow it.
func TestICSFeedsPrivateAddress(t *testing.T) {
	srv := newICSTestServer(t, feedA)
	f, err := NewICSFeeds([]string{srv.URL}, ICSFeedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	got, err := f.Busy(context.Background(), feedFrom, feedTo, time.UTC)
	if !errors.Is(err, ErrAvailabilityUnknown) || !errors.Is(err, fetch.ErrBlockedAddress) || !strings.Contains(err.Error(), "FETCH_ALLOW_PRIVATE") {
		t.Fatalf("Busy = %v, %v; want ErrAvailabilityUnknown for a blocked address", got, err)
	}
	if n := srv.requests.Load(); n != 0 {
		t.Errorf("the feed's server got %d requests; want none", n)
	}
}

func TestICSFeedsClose(t *testing.T) {
	srv := newICSTestServer(t, feedA)
	clock := &testClock{t: at("2026-03-01T00:00Z")}
	f := newTestFeeds(t, []string{srv.URL}, clock, ICSFeedOptions{})
	if _, err := f.Busy(context.Background(), feedFrom, feedTo, time.UTC); err != nil {
		t.Fatal(err)
	}
	f.Close()
	clock.Advance(6 * time.Minute)
	got, err := f.Busy(context.Background(), feedFrom, feedTo, time.UTC)
	f.waitBackground()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(showIntervals(busyA), showIntervals(got)); diff != "" {
		t.Errorf("stale copy after Close (-want +got):\n%s", diff)
	}
	if n := srv.requests.Load(); n != 1 {
		t.Errorf("server had %d requests; want 1: no background fetch after Close", n)
	}
	clock.Advance(time.Hour)
	if _, err := f.Busy(context.Background(), feedFrom, feedTo, time.UTC); err != nil {
		t.Errorf("Busy without a usable copy after Close: %v", err)
	}
	if n := srv.requests.Load(); n != 2 {
		t.Errorf("server had %d requests; want 2: a fetch when no copy is usable", n)
	}
}
