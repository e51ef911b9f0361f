package faults_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/cli"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
	"github.com/sitetools/sitetools/internal/testkit"
)

// loadKind is one kind of request of the load.
type loadKind struct {
	name    string
	needsDB bool
	ok      int // the status of success
	do      func(ctx context.Context, n int) reply
	check   func(r reply) error // of a successful reply
}

type loadRecord struct {
	kind *loadKind
	r    reply
	end  time.Time
}

// TestDatabaseOutageUnderLoad stops PostgreSQL for 5s while concurrent clients call
// get_free_slots, search_site (a cached and a new query each time), /readyz,
// /healthz, the tool list and POST /admin/bookings against `sitetools serve` (run in this process,
// through the command line's own wiring, so that its goroutines can be counted).
// Every answer is a success or 503 unavailable with Retry-After, never a 500 and never
// later than the tool deadline plus slack; what needs no database keeps answering 200;
// what needs it answers 503 while it is down and succeeds again once it is back,
// without a restart; and the service holds no more goroutines afterwards than before.
func TestDatabaseOutageUnderLoad(t *testing.T) {
	const (
		toolTimeout = 3 * time.Second // TOOL_TIMEOUT
		slack       = 2 * time.Second
		outage      = 5 * time.Second
		workers     = 7
		// Goroutines the service may hold beyond its count before the load.
		goroutineSlack = 5
	)
	c := pgtest.NewCluster(t)
	dbURL := c.URL
	vars := serviceVars(t, dbURL, true, map[string]string{
		"TOOL_TIMEOUT":     toolTimeout.String(),
		"SHUTDOWN_TIMEOUT": "5s",
		"LOG_LEVEL":        "warn",
	})
	pub, adm := vars["LISTEN_ADDR"], vars["ADMIN_LISTEN_ADDR"]
	testkit.Run(t, binary, vars, "migrate")
	ingestDemo(t, vars)

	serveInProcess(t, vars)
	base, adminBase := "http://"+pub, "http://"+adm

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers * 2}}
	kinds := outageKinds(t, client, base, adminBase)
	var seq atomic.Int64
	call := func(k *loadKind) loadRecord {
		// A hard cap far past the bound, so that a hung request fails the test instead
		// of hanging it.
		ctx, cancel := context.WithTimeout(context.Background(), toolTimeout+slack+5*time.Second)
		defer cancel()
		r := k.do(ctx, int(seq.Add(1)))
		return loadRecord{kind: k, r: r, end: time.Now()}
	}

	// Warm up: every kind succeeds once; then count the service's goroutines at rest.
	for _, k := range kinds {
		if rec := call(k); rec.r.err != nil || rec.r.status != k.ok {
			t.Fatalf("%s before the outage: %s", k.name, rec.r)
		}
	}
	before := settledGoroutines(client)

	loadCtx, stopLoad := context.WithCancel(context.Background())
	var (
		mu      sync.Mutex
		records []loadRecord
		wg      sync.WaitGroup
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; loadCtx.Err() == nil; i++ {
				rec := call(kinds[i%len(kinds)])
				mu.Lock()
				records = append(records, rec)
				mu.Unlock()
			}
		}()
	}
	// The load runs for fixed durations: 1s before the outage, the outage, 2s after.
	time.Sleep(time.Second)
	c.Stop()
	stopped := time.Now()
	time.Sleep(outage)
	restarting := time.Now()
	c.Start()
	restarted := time.Now()
	time.Sleep(2 * time.Second)
	stopLoad()
	wg.Wait()

	tallies := tallyOutage(records, kinds, outageTimes{stopped, restarting, restarted}, toolTimeout+slack)
	t.Logf("%d requests by %d clients; outage %v (stop at +1s, start took %v)", len(records), workers, outage, restarted.Sub(restarting).Round(time.Millisecond))
	reportOutage(t, kinds, tallies)
	checkGoroutines(t, client, before, goroutineSlack)
}

// settledGoroutines closes the client's idle connections and returns the goroutine
// count once it stopped falling (at most 3s).
func settledGoroutines(client *http.Client) int {
	client.CloseIdleConnections()
	last, same := runtime.NumGoroutine(), 0
	testkit.Eventually(3*time.Second, func() bool {
		n := runtime.NumGoroutine()
		if n == last {
			same++
		} else {
			last, same = n, 0
		}
		return same >= 10
	})
	return last
}

// logExcerpt is the first n lines of a JSON log that are neither info nor about a 503.
func logExcerpt(log string, n int) string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if line == "" || strings.Contains(line, `"level":"INFO"`) || strings.Contains(line, `"code":"unavailable"`) {
			continue
		}
		if out = append(out, line); len(out) == n {
			break
		}
	}
	return strings.Join(out, "\n")
}

// serveInProcess runs `sitetools serve` with vars in this process, through the command
// line's own wiring, until the test ends, and waits until it is ready.
func serveInProcess(t *testing.T, vars map[string]string) {
	t.Helper()
	for k, v := range vars {
		t.Setenv(k, v)
	}
	logs := &testkit.Buffer{}
	ctx, stopServe := context.WithCancel(context.Background())
	var serveErr error
	served := make(chan struct{})
	go func() {
		defer close(served)
		serveErr = cli.Run(ctx, []string{"serve"}, io.Discard, logs)
	}()
	t.Cleanup(func() {
		stopServe()
		select {
		case <-served:
			if serveErr != nil {
				t.Errorf("serve: %v", serveErr)
			}
		case <-time.After(15 * time.Second):
			t.Error("serve did not return within 15s after its context ended")
		}
		if t.Failed() {
			t.Logf("service log, without its info lines and 503s (first 30 lines):\n%s", logExcerpt(logs.String(), 30))
		}
	})
	testkit.WaitReady(t, &http.Client{Timeout: 2 * time.Second}, "http://"+vars["LISTEN_ADDR"]+"/readyz", func() error {
		select {
		case <-served:
			return fmt.Errorf("serve returned: %v", serveErr)
		default:
			return nil
		}
	})
}

// outageKinds are the requests of the load: some need no database, some do.
func outageKinds(t *testing.T, client *http.Client, base, adminBase string) []*loadKind {
	t.Helper()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	tomorrow := time.Now().In(berlin).AddDate(0, 0, 1)
	slotArgs := map[string]any{"from": tomorrow.Format(time.DateOnly), "to": tomorrow.AddDate(0, 0, 6).Format(time.DateOnly)}
	searchOK := func(r reply) error {
		res, err := r.tool()
		if err != nil || res.IsError || len(res.StructuredContent.Results) == 0 {
			return fmt.Errorf("not a search result with results (%v)", err)
		}
		return nil
	}
	return []*loadKind{
		{name: "GET /api/chat/tools", ok: http.StatusOK, do: func(ctx context.Context, _ int) reply {
			return do(ctx, client, http.MethodGet, base+"/api/chat/tools", nil, nil)
		}},
		{name: "GET /healthz", ok: http.StatusOK, do: func(ctx context.Context, _ int) reply {
			return do(ctx, client, http.MethodGet, base+"/healthz", nil, nil)
		}},
		{name: "get_free_slots", needsDB: true, ok: http.StatusOK, do: func(ctx context.Context, _ int) reply {
			return callTool(ctx, client, base, "get_free_slots", slotArgs)
		}, check: func(r reply) error {
			if res, err := r.tool(); err != nil || res.IsError {
				return fmt.Errorf("not a slots result (%v)", err)
			}
			return nil
		}},
		{name: "search_site (cached query)", needsDB: true, ok: http.StatusOK, do: func(ctx context.Context, _ int) reply {
			return callTool(ctx, client, base, "search_site", map[string]any{"query": "accessibility audit"})
		}, check: searchOK},
		{name: "search_site (new query)", needsDB: true, ok: http.StatusOK, do: func(ctx context.Context, n int) reply {
			return callTool(ctx, client, base, "search_site", map[string]any{"query": fmt.Sprintf("cloud cost review %d", n)})
		}, check: searchOK},
		{name: "GET /readyz", needsDB: true, ok: http.StatusOK, do: func(ctx context.Context, _ int) reply {
			return do(ctx, client, http.MethodGet, base+"/readyz", nil, nil)
		}},
		{name: "POST /admin/bookings", needsDB: true, ok: http.StatusCreated, do: func(ctx context.Context, n int) reply {
			return postBooking(ctx, client, adminBase, fmt.Sprintf("outage-%d", n), newBooking(n))
		}},
	}
}

// outageTimes are when the database stopped, began to restart and was back.
type outageTimes struct{ stopped, restarting, restarted time.Time }

// outageTally is what one kind of request got.
type outageTally struct {
	statuses            map[int]int
	during503, afterOK  int
	maxLatency          time.Duration
	failures            int
	firstFailure        string
	successDuringOutage int
}

// tallyOutage sorts every answer by kind: a success (checked), or 503 unavailable with
// Retry-After only for what needs the database and only while it was down; anything
// else, or an answer later than bound, is a failure.
func tallyOutage(records []loadRecord, kinds []*loadKind, at outageTimes, bound time.Duration) map[string]*outageTally {
	stopped, restarting, restarted := at.stopped, at.restarting, at.restarted
	tallies := map[string]*outageTally{}
	for _, k := range kinds {
		tallies[k.name] = &outageTally{statuses: map[int]int{}}
	}
	for _, rec := range records {
		k, r, tl := rec.kind, rec.r, tallies[rec.kind.name]
		tl.statuses[r.status]++
		tl.maxLatency = max(tl.maxLatency, r.latency)
		fail := func(format string, args ...any) {
			tl.failures++
			if tl.firstFailure == "" {
				tl.firstFailure = fmt.Sprintf("request at %+.2fs of the outage: ", r.start.Sub(stopped).Seconds()) + fmt.Sprintf(format, args...)
			}
		}
		during := !r.start.Before(stopped) && rec.end.Before(restarting)
		after := !r.start.Before(restarted)
		switch {
		case r.err != nil:
			fail("no complete answer: %s", r)
			continue
		case r.latency > bound:
			fail("answered after %v, past the tool deadline plus slack (%v): %s", r.latency, bound, r)
		}
		switch {
		case r.status == k.ok:
			if k.check != nil {
				if err := k.check(r); err != nil {
					fail("%v: %s", err, r)
				}
			}
			if after {
				tl.afterOK++
			}
			if during && k.needsDB {
				tl.successDuringOutage++
			}
		case r.status == http.StatusServiceUnavailable:
			if code, ra := r.errorCode(), r.header.Get("Retry-After"); code != "unavailable" {
				fail("503 with code %q, want unavailable: %s", code, r)
			} else if s, err := strconv.Atoi(ra); err != nil || s < 1 {
				fail("503 with Retry-After %q, want whole seconds ≥ 1: %s", ra, r)
			}
			switch {
			case !k.needsDB:
				fail("needs no database but failed: %s", r)
			case after:
				fail("failed after the database was back: %s", r)
			case during:
				tl.during503++
			}
		default:
			fail("status %d, want %d or 503 unavailable: %s", r.status, k.ok, r)
		}
	}
	return tallies
}

// reportOutage logs each kind's tally and fails on bad answers, on a kind that needs the
// database but never got 503, on a success during the outage and on no recovery.
func reportOutage(t *testing.T, kinds []*loadKind, tallies map[string]*outageTally) {
	t.Helper()
	for _, k := range kinds {
		tl := tallies[k.name]
		t.Logf("  %-28s statuses %v, max latency %v, 503 during the outage %d, successes after %d",
			k.name, tl.statuses, tl.maxLatency.Round(time.Millisecond), tl.during503, tl.afterOK)
		if tl.failures > 0 {
			t.Errorf("%s: %d bad answers; the first: %s", k.name, tl.failures, tl.firstFailure)
		}
		if k.needsDB && tl.during503 == 0 {
			t.Errorf("%s: no 503 while the database was down (the load did not reach it, or it answered from elsewhere)", k.name)
		}
		if tl.successDuringOutage > 0 {
			t.Errorf("%s: %d successes while the database was down", k.name, tl.successDuringOutage)
		}
		if tl.afterOK == 0 {
			t.Errorf("%s: no success after the database was back: the service did not recover", k.name)
		}
	}
}

// checkGoroutines: no goroutine outlives the outage. Once the clients' idle connections
// are closed, the service settles back to its count before the load.
func checkGoroutines(t *testing.T, client *http.Client, before, slack int) {
	t.Helper()
	client.CloseIdleConnections()
	var after int
	if !testkit.Eventually(10*time.Second, func() bool {
		client.CloseIdleConnections()
		after = runtime.NumGoroutine()
		return after <= before+slack
	}) {
		var stacks strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
		t.Errorf("goroutines: %d before the load, %d after it settled (allowed %d more):\n%s", before, after, slack, stacks.String())
	} else {
		t.Logf("goroutines: %d before the load, %d after", before, after)
	}
}
