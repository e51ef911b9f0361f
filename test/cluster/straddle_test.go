package cluster_test

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestSingleFlightStraddlesTheCall: 50 bursts of 12 identical searches of a new query
// over the 3 replicas, timed to straddle the end of the provider's one call (200 ms):
// 4 at once, 4 sent as the call nears its end (150 to 200 ms after the provider received
// it), and 4 sent just after it answered, while the replica that made the call stores
// the vector and ends its claim. Each replica gets each part in turn. The provider
// receives exactly one request per burst, no text twice, and every search gets the
// query's vector.
func TestSingleFlightStraddlesTheCall(t *testing.T) {
	t.Parallel()
	const bursts, each = 50, 12
	c := startCluster(t, 3, nil)
	p := c.Provider()
	p.SetDelay(200 * time.Millisecond)
	p.RecordTexts()
	calls := p.Calls()
	extra := 0
	for burst := range bursts {
		before := p.Calls()
		out := straddle(t, c, burst, fmt.Sprintf("burst %d: which services does a straddled flight of questions need", burst))
		byReason, longest := answered(t, out)
		if got := p.Calls() - before; got != 1 {
			extra += got - 1
			t.Errorf("burst %d: the provider received %d requests for one query searched %d times, want 1; by degraded reason %v, the longest search %v",
				burst, got, each, byReason, longest.Round(time.Millisecond))
		}
		if byReason[""] != each {
			t.Errorf("burst %d: %d of %d searches got the query's vector, want all (by degraded reason %v)", burst, byReason[""], each, byReason)
		}
	}
	seen := map[string]int{}
	for _, text := range p.Texts() {
		if seen[text]++; seen[text] == 2 {
			t.Errorf("the provider was sent %q more than once", text)
		}
	}
	t.Logf("%d bursts of %d identical searches over 3 replicas: %d provider requests (%d more than one a burst)",
		bursts, each, p.Calls()-calls, extra)
	if got := p.Calls() - calls; got != bursts {
		t.Errorf("%d bursts cost %d provider requests, want %d", bursts, got, bursts)
	}
}

// straddle sends the 12 searches of one burst of query and returns how each went. The
// replicas take the three parts in turn from burst to burst.
func straddle(t *testing.T, c *cluster, burst int, query string) []searchOutcome {
	t.Helper()
	p := c.Provider()
	calls, answers := p.Calls(), p.Inputs()
	out := make([]searchOutcome, 12)
	for i := range out {
		out[i] = searchOutcome{query: query, err: fmt.Errorf("search %d of burst %d not sent", i, burst)}
	}
	var wg sync.WaitGroup
	send := func(i int, after time.Duration) {
		wg.Go(func() {
			if after > 0 {
				time.Sleep(after) // the burst's timing, not a synchronisation
			}
			began := time.Now()
			degraded, err := searchVia(c.Replica((i+burst)%3), query)
			out[i] = searchOutcome{query: query, degraded: degraded, err: err, took: time.Since(began)}
		})
	}
	for i := range 4 {
		send(i, 0)
	}
	// The provider has the call: the next four arrive as it ends.
	if !poll(10*time.Second, func() bool { return p.Calls() > calls }) {
		wg.Wait()
		t.Errorf("burst %d: the provider received no request within 10 s", burst)
		return out
	}
	for i, after := range []time.Duration{150, 175, 190, 200} {
		send(4+i, after*time.Millisecond)
	}
	// The provider answered: the last four arrive while its answer is being stored.
	if poll(10*time.Second, func() bool { return p.Inputs() > answers }) {
		for i, after := range []time.Duration{0, 5, 15, 40} {
			send(8+i, after*time.Millisecond)
		}
	} else {
		t.Errorf("burst %d: the provider answered no request within 10 s", burst)
	}
	wg.Wait()
	return out
}

// poll reports whether cond held within d, looking every millisecond: the straddling
// searches are timed from the provider's own counts.
func poll(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
	return true
}
