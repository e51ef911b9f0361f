// Package breaker is a circuit breaker for a model provider: after a run of calls that
// failed because the provider is down or overloaded (llm.ProviderFailure), or when the
// provider asks for a pause (a 429 or 503 with Retry-After), it refuses calls at once
// instead of letting each wait for its own timeout, and after a cool-down lets one probe
// call decide whether the provider is back.
//
// It is written here rather than taken from sony/gobreaker because that one cannot open
// for as long as a provider's Retry-After asks (its open state lasts one fixed timeout)
// and counts every error alike, where a caller's cancellation or a refused budget must
// leave the count as it is.
package breaker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitetools/sitetools/internal/llm"
)

// State is where a circuit stands.
type State int

// The states of a circuit.
const (
	// Closed lets every call through and counts the provider failures in a row.
	Closed State = iota
	// Open refuses every call until its cool-down or the provider's Retry-After passed.
	Open
	// HalfOpen lets one probe call through and refuses the rest until it reports.
	HalfOpen
)

// String is the state's name in metrics documentation, logs and Status:
// "closed", "open" or "half_open".
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half_open"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Options configures a Breaker. Zero values mean the defaults given per field.
type Options struct {
	// Kind names the provider, "embedding" or "llm": the metrics' kind label and the
	// logs' kind. Required.
	Kind string
	// Failures is how many provider failures in a row open the circuit. Default 5.
	Failures int
	// Cooldown is how long the circuit stays open before one probe call decides.
	// Default 30s.
	Cooldown time.Duration
	// MaxRetryAfter caps how long a provider's Retry-After keeps the circuit open.
	// Default 10m.
	MaxRetryAfter time.Duration
	// Now reads the clock; nil is time.Now.
	Now func() time.Time
	// Registerer receives the metrics; nil: no metrics. Breakers of different kinds
	// share one registry's series; give each kind one Breaker per registry.
	Registerer prometheus.Registerer
	// Logger receives a line when the circuit opens and when it closes (kind, reason,
	// until; never an error's text). Nil discards.
	Logger *slog.Logger
}

// The defaults of Options.
const (
	DefaultFailures      = 5
	DefaultCooldown      = 30 * time.Second
	DefaultMaxRetryAfter = 10 * time.Minute
)

// ErrOpen is the error of Allow when the circuit refuses a call; the error is an
// *OpenError, for which errors.Is(err, ErrOpen) and errors.Is(err, llm.ErrUnavailable)
// both hold, so that callers degrade as for a provider that is down.
var ErrOpen = errors.New("provider circuit open")

// ErrNotCalled is what a caller reports to Call.Done when, once admitted, it made no
// call after all (no budget left, or its database failed first): neither a success nor a
// failure of the provider.
var ErrNotCalled = errors.New("no provider call was made")

// OpenError is the error of a refused call: Until is when the circuit lets a probe
// through at the latest.
type OpenError struct {
	Kind  string
	Until time.Time
}

func (e *OpenError) Error() string {
	return fmt.Sprintf("%s %s until %s", e.Kind, ErrOpen, e.Until.UTC().Format(time.RFC3339))
}

// Is makes errors.Is find ErrOpen and llm.ErrUnavailable in the error.
func (e *OpenError) Is(target error) bool { return target == ErrOpen || target == llm.ErrUnavailable }

// Call is a call that Allow admitted.
type Call interface {
	// Done reports how the call ended, exactly once; later reports are ignored. nil is
	// a success, which closes the circuit and clears the failures in a row. An error
	// for which llm.ProviderFailure holds is a failure: a run of Options.Failures of
	// them opens the circuit, and a failed probe opens it again for another cool-down.
	// A 429 or 503 with llm.RetryAfter(err) > 0 opens it at once for that long (capped
	// at Options.MaxRetryAfter), whatever the count. Any other error (another 4xx, the
	// caller's cancellation, a refused budget) is neutral: it neither counts nor clears
	// the count, and after a neutral probe the next call probes.
	Done(err error)
}

// Breaker is a circuit breaker for one provider. It is safe for concurrent use. A nil
// *Breaker is off: it admits every call.
type Breaker struct {
	kind                    string
	failures                int
	cooldown, maxRetryAfter time.Duration
	now                     func() time.Time
	log                     *slog.Logger
	metrics                 *metrics // nil: none

	mu    sync.Mutex
	state State
	// gen changes with every change of state and every probe admitted: a call admitted
	// under an older one reports into a circuit that has moved on, and is ignored.
	gen     uint64
	run     int       // provider failures in a row, while closed
	until   time.Time // open: when a probe may go; half-open: when a probe that has not reported stops holding the others back
	probing bool      // half-open: a probe is out
	opened  int64
	saved   int64
}

// New returns a closed circuit for opts.
func New(opts Options) (*Breaker, error) {
	switch {
	case opts.Kind == "":
		return nil, errors.New("breaker.New: a kind is required")
	case opts.Failures < 0:
		return nil, fmt.Errorf("breaker.New: failures must not be negative, got %d", opts.Failures)
	case opts.Cooldown < 0, opts.MaxRetryAfter < 0:
		return nil, errors.New("breaker.New: durations must not be negative")
	}
	b := &Breaker{
		kind:          opts.Kind,
		failures:      cmpOr(opts.Failures, DefaultFailures),
		cooldown:      cmpOr(opts.Cooldown, DefaultCooldown),
		maxRetryAfter: cmpOr(opts.MaxRetryAfter, DefaultMaxRetryAfter),
		now:           opts.Now,
		log:           opts.Logger,
	}
	if b.now == nil {
		b.now = time.Now
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if opts.Registerer != nil {
		m, err := newMetrics(opts.Registerer, opts.Kind)
		if err != nil {
			return nil, fmt.Errorf("breaker.New: %w", err)
		}
		b.metrics = m
		m.setState(Closed)
	}
	return b, nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Allow asks to make one call now. When the circuit is closed it lets the call through.
// When open it refuses at once (no wait) with an *OpenError, counting a call saved,
// until the cool-down or the Retry-After has passed; then it lets exactly one probe
// through (half-open) and refuses the rest until the probe reports. A probe that has not
// reported within a cool-down no longer holds the others back: the next call probes.
// The Call of a refusal is a no-op, so that callers may report every call alike.
func (b *Breaker) Allow() (Call, error) {
	if b == nil {
		return noCall{}, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	b.advance(now)
	switch {
	case b.state == Closed:
		return &call{b: b, gen: b.gen}, nil
	case b.state == Open, b.probing && now.Before(b.until):
		b.saved++
		if b.metrics != nil {
			b.metrics.saved.Inc()
		}
		return noCall{}, &OpenError{Kind: b.kind, Until: b.until}
	}
	b.gen++
	b.probing = true
	b.until = now.Add(b.cooldown)
	return &call{b: b, gen: b.gen}, nil
}

// advance turns an open circuit whose time is up half-open.
func (b *Breaker) advance(now time.Time) {
	if b.state == Open && !now.Before(b.until) {
		b.setState(HalfOpen)
		b.probing = false
	}
}

// setState moves the circuit to s, a new generation.
func (b *Breaker) setState(s State) {
	b.state = s
	b.gen++
	if b.metrics != nil {
		b.metrics.setState(s)
	}
}

// call is a call Allow admitted.
type call struct {
	b    *Breaker
	gen  uint64
	done atomic.Bool
}

func (c *call) Done(err error) {
	if c.done.CompareAndSwap(false, true) {
		c.b.report(c.gen, err)
	}
}

// noCall is the Call of a refusal or of a nil Breaker.
type noCall struct{}

func (noCall) Done(error) {}

// report takes in how a call admitted under generation gen ended.
func (b *Breaker) report(gen uint64, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if gen != b.gen {
		return
	}
	now := b.now()
	switch {
	case err == nil:
		b.run = 0
		if b.state == HalfOpen {
			b.close(now)
		}
	case retryAfter(err) > 0:
		b.open(now, min(retryAfter(err), b.maxRetryAfter), "retry_after", err)
	case llm.ProviderFailure(err):
		if b.state == HalfOpen {
			b.open(now, b.cooldown, "failures", err)
			return
		}
		if b.run++; b.run >= b.failures {
			b.open(now, b.cooldown, "failures", err)
		}
	case b.state == HalfOpen:
		b.probing = false // a neutral probe: the next call probes
	}
}

// retryAfter is the pause a provider asked for with a 429 or 503 that err carries, or 0.
func retryAfter(err error) time.Duration {
	var se *llm.StatusError
	if !errors.As(err, &se) || (se.StatusCode != http.StatusTooManyRequests && se.StatusCode != http.StatusServiceUnavailable) {
		return 0
	}
	return llm.RetryAfter(err)
}

// open opens the circuit for d after the failure err.
func (b *Breaker) open(now time.Time, d time.Duration, reason string, err error) {
	b.setState(Open)
	b.run, b.probing = 0, false
	b.until = now.Add(d)
	b.opened++
	if b.metrics != nil {
		b.metrics.opened.Inc()
	}
	b.log.LogAttrs(context.Background(), slog.LevelWarn, "provider circuit opened",
		slog.String("kind", b.kind), slog.String("reason", reason), slog.String("cause", cause(err)),
		slog.Time("until", b.until))
}

// close closes the circuit after a probe succeeded.
func (b *Breaker) close(now time.Time) {
	b.setState(Closed)
	b.run, b.probing = 0, false
	b.until = time.Time{}
	b.log.LogAttrs(context.Background(), slog.LevelInfo, "provider circuit closed",
		slog.String("kind", b.kind), slog.Time("at", now))
}

// cause names what kind of failure err is, never with its text, which may quote inputs:
// "status 503", "timeout" or "transport" (a connection that failed, a stream that broke).
func cause(err error) string {
	var se *llm.StatusError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("status %d", se.StatusCode)
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	}
	return "transport"
}
