package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/internal/postgres"
)

// The large-site section (runLargeSite): the real `sitetools serve` as a subprocess
// syncs a generated site of -large-site-pages pages behind a sitemap index of gzip
// urlsets through its publish hook (POST /admin/reindex {"all": true}), embedding
// through the fake provider over HTTP; then again with nothing changed, over <lastmod>
// and over 304s; then the site's sitemap turns into gzip bombs. The process's resident
// set is read from /proc throughout.

const (
	largeSiteName   = "Large site sync"
	largeDatabase   = "sitetools_bench_large"
	largeAdminToken = "bench-large-site-admin-token-0123"
	largeRSSGoal    = 300 << 20 // serve's resident set, every phase
	largeAgainX     = 10.0      // an unchanged sync at least this many times faster than the first
	largeBombGoal   = 100 << 20 // a bomb's peak above the resident set before it
	// largeSample is how often serve's VmRSS is read during a phase.
	largeSample = 50 * time.Millisecond
)

// largePhase is one sync of the section.
type largePhase struct {
	label string
	mode  int32 // the sitemap the site serves (largeMode…)
	// fresh starts serve again before the sync: a bomb's cost is measured from a process
	// at rest, not from one whose heap a sync of the whole site left grown.
	fresh bool
}

func largePhases() []largePhase {
	return []largePhase{
		{"first sync, sitemap with <lastmod>", largeModeLastmod, false},
		{"unchanged, <lastmod> not moved (no request)", largeModeLastmod, false},
		{"<lastmod> gone from the sitemap (304s; each page's stored <lastmod> cleared)", largeModeNoLastmod, false},
		{"unchanged, sitemap without <lastmod> (304s)", largeModeNoLastmod, false},
		{fmt.Sprintf("gzip bomb: %d MB of XML (serve started again)", largeBombMB), largeModeBomb, true},
		{fmt.Sprintf("gzip bomb sent with Content-Encoding: gzip: %d GB of XML", largeDoubleBombMB>>10), largeModeDouble, false},
	}
}

// largeJob is a sync job as GET /admin/reindex/{id} shows it.
type largeJob struct {
	ID       string             `json:"id"`
	State    string             `json:"state"`
	Started  *time.Time         `json:"started"`
	Finished *time.Time         `json:"finished"`
	Pages    postgres.SyncPages `json:"pages"`
	Error    string             `json:"error"`
}

// largeResult is what one phase measured.
type largeResult struct {
	phase          largePhase
	job            largeJob
	took           time.Duration // the job's, from its start to its end as serve recorded them
	before         int64         // VmRSS when the phase began
	hwm            int64         // VmHWM over the phase (reset at its start)
	sampled        int64         // the largest VmRSS read every largeSample
	samples        int
	cpu            time.Duration // serve's CPU time during the phase
	bodies, notMod int64         // what the site sent: pages in full, 304s
	conns          int64         // connections the site accepted
	requests       int           // embedding requests the provider received
	indexed        int           // pages in the index after the phase
	logged         bool          // a bomb: serve's log says the sync failed, naming the file
}

// largeRunner holds what the phases share.
type largeRunner struct {
	env    sectionEnv
	site   *largeSite
	fake   *llmtest.Server
	serve  *proc
	admin  string
	db     *postgres.DB
	client *http.Client
}

func runLargeSite(ctx context.Context, env sectionEnv) (_ sectionResult, err error) {
	n := env.s.largePages
	tmp, err := os.MkdirTemp("", "sitetools-bench-large-")
	if err != nil {
		return sectionResult{}, err
	}
	defer os.RemoveAll(tmp)
	dbURL, err := freshDatabase(ctx, env.adminURL, largeDatabase)
	if err != nil {
		return sectionResult{}, err
	}
	defer func() {
		if derr := dropDatabase(context.WithoutCancel(ctx), env.adminURL, largeDatabase); derr != nil && err == nil {
			err = derr
		}
	}()
	bin, err := buildServe(ctx, tmp, dbURL, env.stderr)
	if err != nil {
		return sectionResult{}, err
	}
	r := &largeRunner{env: env, client: &http.Client{Timeout: 10 * time.Second}}
	fmt.Fprintf(env.stderr, "%s: generating the site of %s pages\n", largeSiteName, thousands(n))
	if r.site, err = startLargeSite(n); err != nil {
		return sectionResult{}, err
	}
	defer r.site.srv.Close()
	if r.fake, err = llmtest.StartServer(hnswDims); err != nil {
		return sectionResult{}, err
	}
	defer r.fake.Close()
	if r.db, err = postgres.Open(ctx, dbURL, 2); err != nil {
		return sectionResult{}, err
	}
	defer r.db.Close()
	idle, err := r.start(ctx, bin)
	if err != nil {
		return sectionResult{}, err
	}
	defer func() { r.serve.stop() }()
	var results []largeResult
	var again largeIdle
	for _, ph := range largePhases() {
		fmt.Fprintf(env.stderr, "%s: %s\n", largeSiteName, ph.label)
		if ph.fresh {
			r.serve.stop()
			if again, err = r.start(ctx, bin); err != nil {
				return sectionResult{}, err
			}
		}
		res, err := r.phase(ctx, ph)
		if err != nil {
			return sectionResult{}, fmt.Errorf("%s: %w", ph.label, err)
		}
		results = append(results, res)
	}
	return largeReport(n, bin, r.site, [2]largeIdle{idle, again}, results), nil
}

// largeIdle is serve's resident set once ready, before any sync, and its peak until then.
type largeIdle struct{ rss, hwm int64 }

// start runs `sitetools serve` with the sync on the site (on the hook only) and the fake
// provider, and returns its resident set once ready.
func (r *largeRunner) start(ctx context.Context, bin *serveBinary) (largeIdle, error) {
	adminAddr, err := freeAddr()
	if err != nil {
		return largeIdle{}, err
	}
	r.admin = "http://" + adminAddr
	r.serve, err = bin.start(ctx, map[string]string{
		"ADMIN_LISTEN_ADDR":     adminAddr,
		"ADMIN_TOKEN":           largeAdminToken,
		"INGEST_SITEMAP_URL":    r.site.SitemapURL(),
		"INGEST_INTERVAL":       "0",
		"FETCH_ALLOW_PRIVATE":   "127.0.0.1/32",
		"EMBEDDINGS_PROVIDER":   "openai",
		"EMBEDDINGS_BASE_URL":   r.fake.BaseURL(),
		"EMBEDDINGS_MODEL":      scaleFakeModel,
		"EMBEDDINGS_DIMENSIONS": strconv.Itoa(hnswDims),
	})
	if err != nil {
		return largeIdle{}, err
	}
	return largeIdle{rss: r.serve.memory("VmRSS"), hwm: r.serve.memory("VmHWM")}, nil
}

// phase switches the site's sitemap, asks serve for a whole-site sync, follows the job
// to its end, and reads what it cost.
func (r *largeRunner) phase(ctx context.Context, ph largePhase) (largeResult, error) {
	res := largeResult{phase: ph}
	r.site.mode.Store(ph.mode)
	pid := r.serve.cmd.Process.Pid
	resetPeak(pid)
	res.before = r.serve.memory("VmRSS")
	cpu, bodies, notMod, requests := r.serve.cpu(), r.site.bodies.Load(), r.site.notModified.Load(), len(r.fake.Requests())
	conns := r.site.conns.Load()
	stopSampling := sampleRSS(pid, &res.sampled, &res.samples)
	job, err := r.sync(ctx)
	stopSampling()
	if err != nil {
		return res, err
	}
	res.job = job
	res.hwm = r.serve.memory("VmHWM")
	res.cpu = r.serve.cpu() - cpu
	res.bodies, res.notMod = r.site.bodies.Load()-bodies, r.site.notModified.Load()-notMod
	res.requests = len(r.fake.Requests()) - requests
	res.conns = r.site.conns.Load() - conns
	if job.Started != nil && job.Finished != nil {
		res.took = job.Finished.Sub(*job.Started)
	}
	if err := r.db.Pool.QueryRow(ctx, `SELECT count(*) FROM pages`).Scan(&res.indexed); err != nil {
		return res, err
	}
	switch ph.mode {
	case largeModeBomb:
		res.logged = r.loggedFailure("/bomb.xml.gz")
	case largeModeDouble:
		res.logged = r.loggedFailure("/bomb-double.xml.gz")
	}
	return res, nil
}

// sync posts a whole-site sync to the publish hook and polls its job until it is done
// or failed.
func (r *largeRunner) sync(ctx context.Context) (largeJob, error) {
	var job largeJob
	if err := r.admin1(ctx, http.MethodPost, "/admin/reindex", `{"all": true}`, http.StatusAccepted, &job); err != nil {
		return job, err
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for job.State != "done" && job.State != "failed" {
		select {
		case <-ctx.Done():
			return job, ctx.Err()
		case <-tick.C:
		}
		if err := r.admin1(ctx, http.MethodGet, "/admin/reindex/"+job.ID, "", http.StatusOK, &job); err != nil {
			return job, err
		}
		select {
		case <-r.serve.done:
			return job, fmt.Errorf("sitetools serve exited during the sync: %v\n%s", r.serve.err, r.serve.head())
		default:
		}
	}
	return job, nil
}

// admin1 sends one admin API request and decodes its answer into out.
func (r *largeRunner) admin1(ctx context.Context, method, path, body string, want int, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, r.admin+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+largeAdminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: status %d, want %d", method, path, resp.StatusCode, want)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// loggedFailure reports whether serve's log says a sync failed on file for its size.
func (r *largeRunner) loggedFailure(file string) bool {
	b, err := os.ReadFile(r.serve.log.Name())
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "index sync failed") && strings.Contains(line, file+": larger than") {
			return true
		}
	}
	return false
}

// resetPeak resets the process's VmHWM to its resident set now (Linux: clear_refs 5),
// so that VmHWM read later is the peak since.
func resetPeak(pid int) {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// sampleRSS reads the process's VmRSS every largeSample into *peak (the largest) and
// counts the reads in *n, until the returned function is called.
func sampleRSS(pid int, peak *int64, n *int) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	path := fmt.Sprintf("/proc/%d/status", pid)
	wg.Go(func() {
		tick := time.NewTicker(largeSample)
		defer tick.Stop()
		for {
			if v := statusBytes(path, "VmRSS"); v > 0 {
				*peak, *n = max(*peak, v), *n+1
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	return func() { close(done); wg.Wait() }
}
