package server

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/sitetools/sitetools/tools"
)

// RateLimiter allows each client perMinute calls per minute, with bursts up to that
// many; a light call (tools.Tool.Light: an as-you-type search) counts as a quarter of one. It is per replica and in memory: addresses are never stored elsewhere, and a
// client is forgotten within two minutes of its last call (its allowance refills within
// one; a sweep runs every minute while it holds any client, busy or quiet).
type RateLimiter struct {
	perMinute int
	now       func() time.Time
	// after runs f once after d (time.AfterFunc; tests run the sweep themselves).
	after func(d time.Duration, f func())
	// IPv6Prefix keys IPv6 clients by their network of this many bits (64: a /64, what
	// one household or server gets), so that rotating through one's own addresses buys
	// nothing. 0 or 128 keys each address.
	IPv6Prefix int

	mu        sync.Mutex
	clients   map[string]*rate.Limiter
	scheduled bool // a sweep is pending
}

// NewRateLimiter returns a limiter; perMinute 0 allows everything. now is the clock
// (nil: time.Now).
func NewRateLimiter(perMinute int, now func() time.Time) *RateLimiter {
	if now == nil {
		now = time.Now
	}
	after := func(d time.Duration, f func()) { time.AfterFunc(d, f) }
	return &RateLimiter{perMinute: perMinute, now: now, after: after, clients: map[string]*rate.Limiter{}}
}

// lightShare is how many light calls make one call.
const lightShare = 4

// Allow takes one call from client's allowance. When none is left it returns false and
// how long until one is.
func (l *RateLimiter) Allow(client string) (bool, time.Duration) {
	return l.allowN(client, lightShare)
}

// allowN takes n quarters of a call from client's allowance.
func (l *RateLimiter) allowN(client string, n int) (bool, time.Duration) {
	if l.perMinute <= 0 {
		return true, 0
	}
	client = l.key(client)
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.clients[client]
	if !ok {
		lim = rate.NewLimiter(rate.Every(time.Minute/time.Duration(l.perMinute*lightShare)), l.perMinute*lightShare)
		l.clients[client] = lim
		if !l.scheduled {
			l.scheduled = true
			l.after(time.Minute, l.sweep)
		}
	}
	r := lim.ReserveN(now, n)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// key is the bucket of a client address (see clientKey).
func (l *RateLimiter) key(client string) string { return clientKey(client, l.IPv6Prefix) }

// clientKey is the bucket of a client address: an IPv6 address's network of ipv6Prefix
// bits, anything else as it is.
func clientKey(client string, ipv6Prefix int) string {
	if ipv6Prefix <= 0 || ipv6Prefix >= 128 {
		return client
	}
	a, err := netip.ParseAddr(client)
	if err != nil || !a.Is6() || a.Is4In6() {
		return client
	}
	p, err := a.WithZone("").Prefix(ipv6Prefix)
	if err != nil {
		return client
	}
	return p.String()
}

// sweep forgets the clients whose allowance is full again, and comes again in a
// minute while any client is left: busy or quiet, no address stays longer.
func (l *RateLimiter) sweep() {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	for k, lim := range l.clients {
		if lim.TokensAt(now) >= float64(l.perMinute*lightShare) {
			delete(l.clients, k)
		}
	}
	if len(l.clients) == 0 {
		l.scheduled = false
		return
	}
	l.after(time.Minute, l.sweep)
}

// Intercept applies the limit to every tool call, on every channel.
func (l *RateLimiter) Intercept(ctx context.Context, call *tools.Call, next tools.Invoker) (*tools.Result, error) {
	n := lightShare
	if call.Tool.Light != nil && call.Tool.Light(call.Arguments) {
		n = 1
	}
	if ok, wait := l.allowN(call.Request.Client, n); !ok {
		return nil, &tools.Error{
			Code:       tools.CodeRateLimited,
			Message:    "too many requests; retry after the time in Retry-After",
			RetryAfter: max(wait, time.Second),
		}
	}
	return next(ctx, call)
}

// Cap bounds how many requests of one kind run at once on this replica, and how many of
// them one client may hold. A request that finds every slot taken is answered 503 with
// Retry-After at once, before any work or provider call, instead of queueing behind the
// others; a client already holding its share is answered 429, so that one client cannot
// take every slot from the others. Both are per replica and in memory; a client's count
// is forgotten when its last request ends.
type Cap struct {
	slots     chan struct{}
	what      string
	perClient int                 // 0: no share
	key       func(string) string // a client's bucket (an IPv6 network, as the rate limit's)

	mu   sync.Mutex
	held map[string]int
}

// NewCap returns a cap of n slots, of which one client may hold perClient; n <= 0 is no
// cap, perClient <= 0 no share. key maps a client address to its bucket (nil: the
// address itself).
func NewCap(n, perClient int, what string, key func(string) string) *Cap {
	if key == nil {
		key = func(s string) string { return s }
	}
	c := &Cap{what: what, perClient: max(perClient, 0), key: key, held: map[string]int{}}
	if n > 0 {
		c.slots = make(chan struct{}, n)
	}
	return c
}

// Acquire takes a slot for client, or returns why not: rate_limited when the client
// holds its share already, unavailable when no slot is free. release gives it back.
func (c *Cap) Acquire(client string) (release func(), err error) {
	untake, err := c.take(c.key(client))
	if err != nil {
		return nil, err
	}
	if c.slots == nil {
		return untake, nil
	}
	select {
	case c.slots <- struct{}{}:
		return func() { <-c.slots; untake() }, nil
	default:
		untake()
		return nil, &tools.Error{
			Code:       tools.CodeUnavailable,
			Message:    fmt.Sprintf("this server is handling as many %s as it can at once; try again shortly", c.what),
			RetryAfter: 2 * time.Second,
		}
	}
}

// take counts one more request of key against its share.
func (c *Cap) take(key string) (untake func(), err error) {
	if c.perClient == 0 {
		return func() {}, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held[key] >= c.perClient {
		return nil, &tools.Error{
			Code:       tools.CodeRateLimited,
			Message:    fmt.Sprintf("you have %d %s running on this server already, as many as one client may; retry after the time in Retry-After", c.perClient, c.what),
			RetryAfter: 2 * time.Second,
		}
	}
	c.held[key]++
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.held[key]--; c.held[key] <= 0 {
			delete(c.held, key)
		}
	}, nil
}

// Intercept applies the cap to every tool call, on every channel.
func (c *Cap) Intercept(ctx context.Context, call *tools.Call, next tools.Invoker) (*tools.Result, error) {
	release, err := c.Acquire(call.Request.Client)
	if err != nil {
		return nil, err
	}
	defer release()
	return next(ctx, call)
}
