package breaker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitetools/sitetools/internal/breaker"
	"github.com/sitetools/sitetools/internal/llm"
)

// clock is a fake clock that tests move by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Errors as the provider clients return them.
var (
	errTimeout = fmt.Errorf("llm.OpenAI.Embed: %w: deadline reached after 1 attempts: %w", llm.ErrUnavailable, context.DeadlineExceeded)
	err503     = fmt.Errorf("llm.OpenAI.Embed: %w: giving up: %w", llm.ErrUnavailable, &llm.StatusError{StatusCode: 503})
	err400     = fmt.Errorf("llm.OpenAI.Embed: %w", &llm.StatusError{StatusCode: 400, Message: "my secret question is too long"})
	errCancel  = fmt.Errorf("llm.Chat.Stream: %w", context.Canceled)
	errBudget  = errors.New("attempt 2 not made: the daily budget is spent")
)

func newBreaker(t *testing.T, c *clock, opts breaker.Options) *breaker.Breaker {
	t.Helper()
	if opts.Kind == "" {
		opts.Kind = "embedding"
	}
	opts.Now = c.Now
	b, err := breaker.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// call makes one call through b that ends with err; it reports whether b admitted it.
func call(b *breaker.Breaker, err error) bool {
	c, refused := b.Allow()
	if refused != nil {
		return false
	}
	c.Done(err)
	return true
}

func checkState(t *testing.T, b *breaker.Breaker, want breaker.State) {
	t.Helper()
	if got := b.State(); got != want {
		t.Fatalf("state %s, want %s", got, want)
	}
}

func TestOpensAfterFailuresInARow(t *testing.T) {
	c := newClock()
	b := newBreaker(t, c, breaker.Options{Failures: 3, Cooldown: 30 * time.Second})
	call(b, errTimeout)
	call(b, err503)
	call(b, nil) // a success clears the run
	call(b, errTimeout)
	call(b, err503)
	checkState(t, b, breaker.Closed)
	call(b, errTimeout)
	checkState(t, b, breaker.Open)

	for range 4 {
		start := time.Now()
		_, err := b.Allow()
		var open *breaker.OpenError
		if !errors.As(err, &open) || !errors.Is(err, breaker.ErrOpen) || !errors.Is(err, llm.ErrUnavailable) || !llm.IsUnavailable(err) {
			t.Fatalf("Allow while open: %v", err)
		}
		if want := c.Now().Add(30 * time.Second); !open.Until.Equal(want) {
			t.Errorf("until %s, want %s", open.Until, want)
		}
		if time.Since(start) > time.Second {
			t.Errorf("a refusal took %s", time.Since(start))
		}
	}
	c.Add(29 * time.Second)
	if call(b, nil) {
		t.Error("admitted a call before the cool-down passed")
	}
	if s := b.Status(); s.OpenedTotal != 1 || s.SavedTotal != 5 || s.State != "open" {
		t.Errorf("status %+v", s)
	}
}

func TestProbe(t *testing.T) {
	c := newClock()
	b := newBreaker(t, c, breaker.Options{Failures: 1, Cooldown: 30 * time.Second})
	call(b, err503)
	c.Add(30 * time.Second)
	checkState(t, b, breaker.HalfOpen)

	probe, err := b.Allow()
	if err != nil {
		t.Fatalf("no probe: %v", err)
	}
	if call(b, nil) {
		t.Fatal("a second call went through while the probe was out")
	}
	probe.Done(errTimeout) // the provider is still down
	checkState(t, b, breaker.Open)
	if s := b.Status(); !s.Until.Equal(c.Now().Add(30*time.Second)) || s.OpenedTotal != 2 {
		t.Errorf("after a failed probe: %+v", s)
	}

	c.Add(30 * time.Second)
	if !call(b, nil) {
		t.Fatal("no probe after the second cool-down")
	}
	checkState(t, b, breaker.Closed)
	if s := b.Status(); !s.Until.IsZero() || s.State != "closed" {
		t.Errorf("closed: %+v", s)
	}
	for range 3 {
		if !call(b, nil) {
			t.Fatal("a closed circuit refused a call")
		}
	}
}

// Many calls at once on a half-open circuit: exactly one is the probe.
func TestOneProbeAmongMany(t *testing.T) {
	for range 20 {
		c := newClock()
		b := newBreaker(t, c, breaker.Options{Failures: 1})
		call(b, err503)
		c.Add(breaker.DefaultCooldown)
		var admitted, refused atomic.Int64
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				<-start
				if _, err := b.Allow(); err == nil {
					admitted.Add(1)
				} else if errors.Is(err, breaker.ErrOpen) {
					refused.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		if admitted.Load() != 1 || refused.Load() != 63 {
			t.Fatalf("%d admitted, %d refused; want 1 and 63", admitted.Load(), refused.Load())
		}
	}
}

// A probe that never reports holds the others back for one cool-down only.
func TestProbeThatNeverReports(t *testing.T) {
	c := newClock()
	b := newBreaker(t, c, breaker.Options{Failures: 1, Cooldown: 10 * time.Second})
	call(b, err503)
	c.Add(10 * time.Second)
	stale, err := b.Allow()
	if err != nil {
		t.Fatal(err)
	}
	c.Add(9 * time.Second)
	if call(b, nil) {
		t.Fatal("a call went through while the probe was out")
	}
	c.Add(time.Second)
	probe, err := b.Allow()
	if err != nil {
		t.Fatalf("no new probe after the first one stayed out a cool-down: %v", err)
	}
	stale.Done(nil) // too late: the new probe decides
	checkState(t, b, breaker.HalfOpen)
	probe.Done(nil)
	checkState(t, b, breaker.Closed)
}

func TestNeutralErrors(t *testing.T) {
	c := newClock()
	b := newBreaker(t, c, breaker.Options{Failures: 2})
	call(b, err503)
	for _, err := range []error{err400, errCancel, errBudget} {
		call(b, err)
	}
	checkState(t, b, breaker.Closed) // neutral errors did not count
	call(b, errTimeout)
	checkState(t, b, breaker.Open) // nor clear the run

	c.Add(breaker.DefaultCooldown)
	if !call(b, errCancel) {
		t.Fatal("no probe")
	}
	checkState(t, b, breaker.HalfOpen)
	if !call(b, nil) {
		t.Fatal("a neutral probe did not let the next call probe")
	}
	checkState(t, b, breaker.Closed)
}

// Done counts once; a call admitted before the circuit opened reports into nothing.
func TestReportsCountOnce(t *testing.T) {
	c := newClock()
	b := newBreaker(t, c, breaker.Options{Failures: 2})
	first, _ := b.Allow()
	first.Done(err503)
	first.Done(err503)
	checkState(t, b, breaker.Closed)

	slow, _ := b.Allow()
	call(b, err503)
	checkState(t, b, breaker.Open)
	c.Add(breaker.DefaultCooldown)
	probe, err := b.Allow()
	if err != nil {
		t.Fatal(err)
	}
	slow.Done(nil) // admitted before the circuit opened: the probe decides
	checkState(t, b, breaker.HalfOpen)
	probe.Done(errTimeout)
	checkState(t, b, breaker.Open)
}

// providerError is the error of an embeddings call answered status with Retry-After
// (seconds; "" for none), as the client returns it.
func providerError(t *testing.T, status int, retryAfter string) error {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(status)
	}))
	defer srv.Close()
	o, err := llm.NewOpenAI(llm.OpenAIOptions{BaseURL: srv.URL + "/v1", Model: "m", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.Embed(context.Background(), []string{"a"})
	if err == nil {
		t.Fatal("no error")
	}
	return err
}

func TestRetryAfterOpensAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name       string
		status     int
		retryAfter string
		max        time.Duration
		want       time.Duration // open for; 0: stays closed
	}{
		{name: "429", status: 429, retryAfter: "20", want: 20 * time.Second},
		{name: "503", status: 503, retryAfter: "45", want: 45 * time.Second},
		{name: "capped", status: 429, retryAfter: "50", max: 15 * time.Second, want: 15 * time.Second},
		{name: "429 without Retry-After", status: 429},
		{name: "500 with Retry-After", status: 500, retryAfter: "20"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := providerError(t, tc.status, tc.retryAfter)
			c := newClock()
			b := newBreaker(t, c, breaker.Options{Failures: 5, MaxRetryAfter: tc.max})
			call(b, err)
			if tc.want == 0 {
				checkState(t, b, breaker.Closed)
				return
			}
			checkState(t, b, breaker.Open)
			if s := b.Status(); !s.Until.Equal(c.Now().Add(tc.want)) {
				t.Errorf("until %s, want %s", s.Until, c.Now().Add(tc.want))
			}
			c.Add(tc.want - time.Millisecond)
			checkState(t, b, breaker.Open)
			c.Add(time.Millisecond)
			checkState(t, b, breaker.HalfOpen)
		})
	}
}

func TestStatusJSON(t *testing.T) {
	c := newClock()
	b := newBreaker(t, c, breaker.Options{Kind: "llm", Failures: 1, Cooldown: time.Minute})
	check := func(want string) {
		t.Helper()
		got, err := json.Marshal(b.Status())
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("status %s\nwant %s", got, want)
		}
	}
	check(`{"kind":"llm","state":"closed","openedTotal":0,"callsSaved":0}`)
	call(b, err503)
	call(b, nil)
	check(`{"kind":"llm","state":"open","openedTotal":1,"callsSaved":1,"until":"2026-03-02T09:01:00Z"}`)
	c.Add(time.Minute)
	check(`{"kind":"llm","state":"half_open","openedTotal":1,"callsSaved":1,"until":"2026-03-02T09:01:00Z"}`)
}

// Two breakers share one registry's series, each under its kind.
func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := newClock()
	emb := newBreaker(t, c, breaker.Options{Kind: "embedding", Failures: 1, Registerer: reg})
	chat := newBreaker(t, c, breaker.Options{Kind: "llm", Failures: 1, Registerer: reg})
	call(emb, err503)
	call(emb, nil)
	call(emb, nil)
	if got := series(t, reg, "sitetools_provider_breaker_calls_saved_total"); got != "embedding=2 llm=0" {
		t.Errorf("calls saved %s", got)
	}
	if got := series(t, reg, "sitetools_provider_breaker_opened_total"); got != "embedding=1 llm=0" {
		t.Errorf("opened %s", got)
	}
	state := func() string { return series(t, reg, "sitetools_provider_breaker_state") }
	if got := state(); got != "embedding=1 llm=0" {
		t.Errorf("state %s", got)
	}
	c.Add(breaker.DefaultCooldown)
	probe, _ := emb.Allow()
	if got := state(); got != "embedding=2 llm=0" {
		t.Errorf("state %s", got)
	}
	probe.Done(nil)
	call(chat, errTimeout)
	if got := state(); got != "embedding=0 llm=1" {
		t.Errorf("state %s", got)
	}
}

// series is the values of a metric by kind: "embedding=1 llm=0".
func series(t *testing.T, reg *prometheus.Registry, name string) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			out = append(out, fmt.Sprintf("%s=%g", m.GetLabel()[0].GetValue(), v))
		}
	}
	return strings.Join(out, " ")
}

// The logs say when and why the circuit opened and when it closed, never what a call
// was about.
func TestLogs(t *testing.T) {
	var logs bytes.Buffer
	c := newClock()
	b := newBreaker(t, c, breaker.Options{Failures: 2, Cooldown: 30 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{ReplaceAttr: dropTime}))})
	secret := fmt.Errorf("embedding %q: %w", "my secret question", &llm.StatusError{StatusCode: 503, Message: "my secret question"})
	call(b, secret)
	call(b, secret)
	call(b, secret) // refused: no line
	c.Add(30 * time.Second)
	call(b, nil)
	want := `level=WARN msg="provider circuit opened" kind=embedding reason=failures cause="status 503" until=2026-03-02T09:00:30.000Z
level=INFO msg="provider circuit closed" kind=embedding at=2026-03-02T09:00:30.000Z
`
	if logs.String() != want {
		t.Errorf("logs:\n%s\nwant:\n%s", logs.String(), want)
	}
}

func dropTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

func TestNilBreakerIsOff(t *testing.T) {
	var b *breaker.Breaker
	for range 10 {
		if !call(b, err503) {
			t.Fatal("a nil breaker refused a call")
		}
	}
	if b.State() != breaker.Closed || b.Status().State != "off" {
		t.Errorf("state %s, status %+v", b.State(), b.Status())
	}
}

func TestNewChecksOptions(t *testing.T) {
	for _, opts := range []breaker.Options{
		{},
		{Kind: "llm", Failures: -1},
		{Kind: "llm", Cooldown: -time.Second},
		{Kind: "llm", MaxRetryAfter: -time.Second},
	} {
		if _, err := breaker.New(opts); err == nil {
			t.Errorf("New(%+v): no error", opts)
		}
	}
	b, err := breaker.New(breaker.Options{Kind: "llm"})
	if err != nil {
		t.Fatal(err)
	}
	for range breaker.DefaultFailures - 1 {
		call(b, err503)
	}
	checkState(t, b, breaker.Closed)
	call(b, err503)
	checkState(t, b, breaker.Open)
}

func TestStateString(t *testing.T) {
	for s, want := range map[breaker.State]string{breaker.Closed: "closed", breaker.Open: "open", breaker.HalfOpen: "half_open"} {
		if s.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(s), s.String(), want)
		}
	}
}
