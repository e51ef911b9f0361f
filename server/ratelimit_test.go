package server

import (
	"errors"
	"testing"
	"time"

	"github.com/sitetools/sitetools/tools"
)

// TestRateLimiterKeysIPv6ByNetwork: a client rotating through the addresses of its own
// /64 gets no fresh allowance; another network and IPv4 clients keep theirs.
func TestRateLimiterKeysIPv6ByNetwork(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	l := NewRateLimiter(1, func() time.Time { return now })
	l.IPv6Prefix = 64
	for _, tc := range []struct {
		client string
		want   bool
	}{
		{"2001:db8:1:2::1", true},
		{"2001:db8:1:2::2", false},                  // the same /64
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", false}, // the same /64
		{"2001:db8:1:3::1", true},                   // the next /64
		{"203.0.113.1", true},
		{"203.0.113.2", true},        // IPv4 addresses are their own
		{"::ffff:203.0.113.3", true}, // an IPv4-mapped address is an IPv4 client
		{"::ffff:203.0.113.4", true}, // …of its own
		{"fe80::1%eth0", true},       // a zone does not matter
		{"fe80::2%eth1", false},      // the same /64
		{"unix", true},               // not an address: as it is
	} {
		if got, _ := l.Allow(tc.client); got != tc.want {
			t.Errorf("Allow(%q) = %v, want %v", tc.client, got, tc.want)
		}
	}

	whole := NewRateLimiter(1, func() time.Time { return now })
	whole.IPv6Prefix = 128
	if ok, _ := whole.Allow("2001:db8::1"); !ok {
		t.Fatal("first call refused")
	}
	if ok, _ := whole.Allow("2001:db8::2"); !ok {
		t.Error("with a prefix of 128 each address is its own client")
	}
}

// TestRateLimiterForgetsQuietClients: with no further call at all, a client's address is
// gone once its allowance is full again, at the next minute's sweep; the sweeps stop when
// no client is left and start again with the next one.
func TestRateLimiterForgetsQuietClients(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	l := NewRateLimiter(2, func() time.Time { return now })
	var pending []func()
	l.after = func(d time.Duration, f func()) {
		if d != time.Minute {
			t.Errorf("sweep after %v, want a minute", d)
		}
		pending = append(pending, f)
	}
	held := func() int {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.clients)
	}
	sweep := func() {
		t.Helper()
		if len(pending) != 1 {
			t.Fatalf("%d sweeps pending, want 1", len(pending))
		}
		f := pending[0]
		pending = pending[1:]
		f()
	}
	l.Allow("203.0.113.1")
	l.Allow("203.0.113.1") // its allowance is spent
	now = now.Add(20 * time.Second)
	l.Allow("203.0.113.2")
	l.Allow("203.0.113.2")
	if held() != 2 || len(pending) != 1 {
		t.Fatalf("%d clients, %d sweeps pending; want 2 and 1", held(), len(pending))
	}
	// A minute after the first call: the first client's allowance (2 a minute) is full
	// again, the second's is not.
	now = now.Add(40 * time.Second)
	sweep()
	if held() != 1 {
		t.Fatalf("after the first sweep %d clients, want 1", held())
	}
	now = now.Add(time.Minute)
	sweep()
	if held() != 0 || len(pending) != 0 {
		t.Fatalf("after the second sweep %d clients, %d sweeps pending; want none", held(), len(pending))
	}
	l.Allow("203.0.113.3")
	if len(pending) != 1 {
		t.Fatalf("a new client after the sweeps stopped: %d sweeps pending, want 1", len(pending))
	}
}

func TestCapRefusesWhenFull(t *testing.T) {
	c := NewCap(2, 0, "tool calls", nil)
	r1, err1 := c.Acquire("a")
	r2, err2 := c.Acquire("a")
	if err1 != nil || err2 != nil {
		t.Fatalf("two slots: %v, %v", err1, err2)
	}
	_, err := c.Acquire("b")
	var e *tools.Error
	if !errors.As(err, &e) || e.Code != tools.CodeUnavailable || e.RetryAfter <= 0 {
		t.Fatalf("a third call: %v, want unavailable with Retry-After", err)
	}
	r1()
	r3, err := c.Acquire("b")
	if err != nil {
		t.Fatalf("after a release: %v", err)
	}
	r2()
	r3()
	if _, err := NewCap(0, 0, "x", nil).Acquire("a"); err != nil {
		t.Fatalf("no cap: %v", err)
	}
}

// TestCapShares: one client holds at most its share and is told 429 past it, while
// another client still gets a slot; a client's IPv6 network counts as one; the share's
// count is given back with the slot, also when the cap itself was full.
func TestCapShares(t *testing.T) {
	c := NewCap(4, 2, "chat conversations", func(s string) string { return clientKey(s, 64) })
	r1, err1 := c.Acquire("2001:db8::1")
	r2, err2 := c.Acquire("2001:db8::2")
	if err1 != nil || err2 != nil {
		t.Fatalf("two within the share: %v, %v", err1, err2)
	}
	_, err := c.Acquire("2001:db8::3")
	var e *tools.Error
	if !errors.As(err, &e) || e.Code != tools.CodeRateLimited || e.RetryAfter <= 0 {
		t.Fatalf("a third from the same /64: %v, want rate_limited with Retry-After", err)
	}
	r3, err := c.Acquire("203.0.113.7")
	if err != nil {
		t.Fatalf("another client: %v", err)
	}
	r4, err := c.Acquire("203.0.113.7")
	if err != nil {
		t.Fatalf("another client's second: %v", err)
	}
	// The cap is full now; a third client is refused with unavailable, and its refusal
	// takes nothing from its share.
	if _, err := c.Acquire("198.51.100.9"); !errors.As(err, &e) || e.Code != tools.CodeUnavailable {
		t.Fatalf("a full cap: %v, want unavailable", err)
	}
	r1()
	if _, err := c.Acquire("2001:db8::4"); err != nil {
		t.Fatalf("after a release, the first client again: %v", err)
	}
	r2()
	r3()
	r4()
	if len(c.held) != 1 {
		t.Errorf("%d clients counted after their requests ended, want 1", len(c.held))
	}
}

// TestRateLimiterCountsLightCallsAsAQuarter: with 2 calls a minute, a client may make 8
// light calls (as-you-type searches), or 1 call and 4 light ones, and then none.
func TestRateLimiterCountsLightCallsAsAQuarter(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	l := NewRateLimiter(2, func() time.Time { return now })
	l.after = func(time.Duration, func()) {}
	for i := range 8 {
		if ok, _ := l.allowN("203.0.113.1", 1); !ok {
			t.Fatalf("light call %d refused", i+1)
		}
	}
	if ok, wait := l.allowN("203.0.113.1", 1); ok || wait <= 0 || wait > 8*time.Second {
		t.Fatalf("a 9th light call: %v, wait %v; want refused, a quarter of 30 s", ok, wait)
	}
	if ok, _ := l.Allow("203.0.113.2"); !ok {
		t.Fatal("a call refused")
	}
	for i := range 4 {
		if ok, _ := l.allowN("203.0.113.2", 1); !ok {
			t.Fatalf("light call %d after a call refused", i+1)
		}
	}
	if ok, _ := l.Allow("203.0.113.2"); ok {
		t.Fatal("a call beyond the allowance passed")
	}
}
