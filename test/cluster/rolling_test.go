package cluster_test

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRollingRestartUnderLoad: three replicas behind nginx, and eight clients sending
// searches (POST /api/chat/tools), catalog reads (GET /api/chat/tools) and /healthz
// through nginx without pause. The replicas are restarted one after another — SIGTERM,
// wait for the exit, start again on the same port, wait until ready and until it serves
// through nginx again — while the load runs. Every request gets a 2xx: none is lost to
// a replica that drains or is down; every replica exits 0 on SIGTERM; and each replica
// serves requests after its restart.
func TestRollingRestartUnderLoad(t *testing.T) {
	const replicas, workers = 3, 8
	begin := time.Now()
	c := startCluster(t, replicas, nil)
	t.Logf("cluster of %d replicas ready in %v", replicas, time.Since(begin).Round(time.Millisecond))

	l := startLoad(c.URL(), workers, kinds)
	t.Cleanup(l.finish)
	waitFor(t, 10*time.Second, "the load did not get going", func() bool { return l.completed() >= 100 })

	for i := range replicas {
		stop, before := time.Now(), l.completed()
		if err := c.Stop(i); err != nil {
			t.Errorf("replica %d exited with %v after SIGTERM, want 0", i, err)
		}
		down := time.Since(stop)
		c.Restart(i)
		ready := time.Since(stop)
		waitFor(t, 30*time.Second, fmt.Sprintf("replica %d served nothing through nginx after its restart", i),
			func() bool { return served(t, c, i) > 0 })
		t.Logf("replica %d: drained and exited in %v, ready again after %v, serving through nginx after %v; %d requests completed meanwhile",
			i, down.Round(time.Millisecond), ready.Round(time.Millisecond), time.Since(stop).Round(time.Millisecond), l.completed()-before)
		if l.completed() == before {
			t.Errorf("no request completed while replica %d restarted: the load stalled", i)
		}
	}
	l.finish()

	t.Logf("%s", l.report())
	for i := range replicas {
		t.Logf("replica %d served %.0f requests through nginx since its restart", i, served(t, c, i))
	}
	if n := l.failures(); n > 0 {
		t.Errorf("%d requests of %d failed through nginx during the rolling restart", n, l.completed())
	}
	for _, kind := range kinds {
		if l.ok(kind) == 0 {
			t.Errorf("no %s request succeeded", kind)
		}
	}
}

// served is the number of requests replica i's running process answered on the routes
// the load uses, which only nginx sends it.
func served(t *testing.T, c *cluster, i int) float64 {
	n := 0.0
	for _, route := range []string{"/api/chat/tools", "/healthz", "/mcp"} {
		n += metric(t, c.Admin(i), "sitetools_http_requests_total", map[string]string{"route": route})
	}
	return n
}

// kinds are the requests of the load, sent in turn by each client.
var kinds = []string{"search", "catalog", "healthz"}

// load is client goroutines sending kinds of requests to one base URL without pause
// until finish.
type load struct {
	base  string
	kinds []string
	begin time.Time
	stop  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup

	mu     sync.Mutex
	done   int
	okBy   map[string]int
	failBy map[string]int
	first  []string // the first failures, when and what
}

// startLoad starts workers clients, each sending kinds of requests in turn to base.
func startLoad(base string, workers int, kinds []string) *load {
	l := &load{base: base, kinds: kinds, begin: time.Now(), stop: make(chan struct{}), okBy: map[string]int{}, failBy: map[string]int{}}
	for w := range workers {
		l.wg.Add(1)
		go l.run(w)
	}
	return l
}

var topics = []string{"accessibility audit", "cloud cost review", "privacy engineering", "data pipelines", "pricing", "headless CMS"}

// run is one client: request after request, kinds in turn, until finish.
func (l *load) run(w int) {
	defer l.wg.Done()
	for k := 0; ; k++ {
		select {
		case <-l.stop:
			return
		default:
		}
		kind := l.kinds[(w+k)%len(l.kinds)]
		var err error
		switch kind {
		case "search":
			_, err = searchVia(l.base, fmt.Sprintf("%s question %d from client %d", topics[k%len(topics)], k, w))
		case "catalog":
			err = get(l.base, "/api/chat/tools")
		case "healthz":
			err = get(l.base, "/healthz")
		case "mcp":
			err = mcpToolsList(l.base)
		}
		l.record(kind, err)
	}
}

func (l *load) record(kind string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done++
	if err == nil {
		l.okBy[kind]++
		return
	}
	l.failBy[kind]++
	if len(l.first) < 20 {
		l.first = append(l.first, fmt.Sprintf("at %v, %s: %v", time.Since(l.begin).Round(time.Millisecond), kind, err))
	}
}

// finish stops the clients and waits for their last requests.
func (l *load) finish() {
	l.once.Do(func() { close(l.stop) })
	l.wg.Wait()
}

func (l *load) completed() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.done
}

func (l *load) ok(kind string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.okBy[kind]
}

func (l *load) failures() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, f := range l.failBy {
		n += f
	}
	return n
}

// report is the counts of requests by kind and outcome, and the first failures.
func (l *load) report() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%d requests in %v:", l.done, time.Since(l.begin).Round(time.Millisecond))
	names := append([]string(nil), l.kinds...)
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(&b, " %s %d ok, %d failed;", k, l.okBy[k], l.failBy[k])
	}
	for _, f := range l.first {
		b.WriteString("\n  " + f)
	}
	return b.String()
}
