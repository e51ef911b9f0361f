// Command bench measures sitetools against baselines measured in the same run: each
// scenario loads a subject (the real service) and a baseline (the least code that gives
// the same answer) in interleaved rounds and reports the throughput or latency ratio
// against a goal. It also measures the recall of the HNSW vector index against exact
// search. `make bench` runs it; it prints the tables and rewrites docs/benchmarks.md.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"runtime/pprof"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/tools"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := realMain(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// settings are the command-line flags.
type settings struct {
	conns       int
	searchConns []int
	duration    time.Duration
	warmup      time.Duration
	rounds      int
	run         *regexp.Regexp
	out         string
	cpuprofile  string
	strict      bool
	hnsw        hnswSettings
	// writeSite, when set, is where to write the generated site of the scale sections
	// (Markdown) instead of benchmarking: the browser benchmarks search it too.
	writeSite string
	// largePages is how many pages the large-site section's site has.
	largePages int
}

func parseFlags(args []string, stderr io.Writer) (settings, error) {
	var s settings
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&s.conns, "c", 32, "concurrent keep-alive connections (closed loop)")
	searchConns := fs.String("search-c", "1,8", "concurrent connections of the search_site scenarios, one scenario each, the same on both sides")
	fs.DurationVar(&s.duration, "duration", 3*time.Second, "length of one measured round")
	fs.DurationVar(&s.warmup, "warmup", time.Second, "unmeasured warm-up per side and scenario")
	fs.IntVar(&s.rounds, "rounds", 3, "measured rounds per side, interleaved subject/baseline")
	run := fs.String("run", "", "run only the scenarios whose name matches this regexp")
	fs.StringVar(&s.out, "out", "docs/benchmarks.md", "markdown report to rewrite, an absolute path or one relative to the module root (empty: none)")
	fs.StringVar(&s.cpuprofile, "cpuprofile", "", "write a CPU profile of the measured rounds to this file")
	fs.BoolVar(&s.strict, "strict", false, "exit non-zero when a scenario misses its goal")
	fs.StringVar(&s.writeSite, "write-scale-site", "", "write the generated site of the scale sections (10 000 Markdown pages) into this new directory, and do nothing else")
	fs.IntVar(&s.largePages, "large-site-pages", 100_000, "pages of the generated site the "+largeSiteName+" section syncs through serve")
	fs.IntVar(&s.hnsw.rows, "hnsw-rows", 100_000, "random vectors in the HNSW recall table")
	fs.IntVar(&s.hnsw.queries, "hnsw-queries", 200, "random query vectors for HNSW recall")
	fs.Uint64Var(&s.hnsw.seed, "hnsw-seed", 1, "seed of the HNSW table's and queries' random vectors")
	efSearch := fs.String("ef-search", "20,40,60,80,100,200,400,1000", "hnsw.ef_search values to measure recall at (the service's own is always added)")
	if err := fs.Parse(args); err != nil {
		return s, err
	}
	if fs.NArg() > 0 {
		return s, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if s.conns < 1 || s.rounds < 1 || s.duration <= 0 || s.warmup < 0 {
		return s, errors.New("-c and -rounds must be at least 1, -duration positive, -warmup not negative")
	}
	if s.largePages < 1 || s.largePages > 1_000_000 {
		return s, errors.New("-large-site-pages must be from 1 to 1 000 000")
	}
	if s.hnsw.rows < 1000 || s.hnsw.queries < 1 {
		return s, errors.New("-hnsw-rows must be at least 1000 and -hnsw-queries at least 1")
	}
	var err error
	if s.hnsw.efSearch, err = parseInts(*efSearch, 1, 1000); err != nil {
		return s, fmt.Errorf("-ef-search: %w", err)
	}
	if s.searchConns, err = parseInts(*searchConns, 1, 1000); err != nil {
		return s, fmt.Errorf("-search-c: %w", err)
	}
	if s.run, err = regexp.Compile(*run); err != nil {
		return s, fmt.Errorf("-run: %w", err)
	}
	return s, nil
}

// scenario is one comparison: the subject and the baseline answer the same request
// with the same bytes, and the subject should reach goal × the baseline's throughput,
// or, for a latency scenario, a median latency of at most goal × the baseline's.
// Without goal (and judge) the ratio is printed but not judged.
type scenario struct {
	name    string
	about   string // what the subject and the baseline are
	goal    float64
	latency bool // the goal is on p50 latency (subject ≤ goal × baseline), not on rps
	conns   int  // concurrent connections or workers per side (0: -c)
	// warmup, when longer than -warmup, is this scenario's warm-up per side (a JIT).
	warmup time.Duration
	// judge, when set, replaces the ratio goal with another one, named by goalText.
	judge    func(result) bool
	goalText string
	// same lists the response headers that must be identical on both sides, beside
	// the status and the body; the check runs before any load.
	same     []string
	subject  target
	baseline target
	// check, when set, replaces the HTTP parity check (a baseline that is no server);
	// after, when set, adds notes once the rounds are over.
	check func() ([]string, error)
	after func() []string
	// peaks, when set, reads each side's peak RSS once the rounds are over (subprocesses).
	peaks func() [2]int64
}

// scenarios is every scenario, given the addresses of the running servers.
func scenarios(svcAddr, bareAddr string, cat *tools.Catalog) []scenario {
	list := request{method: http.MethodGet, path: "/api/chat/tools", header: http.Header{"Accept": {"application/json"}}}
	revalidate := list
	revalidate.header = http.Header{"Accept": {"application/json"}, "If-None-Match": {cat.ETag}}
	const about = "sitetools public API (echo, recoverer, request log at info, metrics, CORS, origin check) " +
		"vs a bare net/http HandlerFunc writing the catalog's bytes and headers"
	return []scenario{
		{
			name:     fmt.Sprintf("GET /api/chat/tools (200, %.1f KB)", float64(len(cat.JSON))/1024),
			about:    about,
			goal:     0.85,
			same:     []string{"Content-Type", "Content-Length", "ETag", "Cache-Control", "Vary"},
			subject:  target{label: "sitetools", addr: svcAddr, req: list, want: http.StatusOK},
			baseline: target{label: "net/http", addr: bareAddr, req: list, want: http.StatusOK},
		},
		{
			name:     "GET /api/chat/tools, If-None-Match (304)",
			about:    about,
			goal:     0.85,
			same:     []string{"Content-Type", "ETag", "Cache-Control", "Vary"},
			subject:  target{label: "sitetools", addr: svcAddr, req: revalidate, want: http.StatusNotModified},
			baseline: target{label: "net/http", addr: bareAddr, req: revalidate, want: http.StatusNotModified},
		},
	}
}

// bareCatalog is the baseline of the catalog scenarios: the least a handler can do to
// serve the registry's catalog with its validators.
func bareCatalog(cat *tools.Catalog) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("ETag", cat.ETag)
		h.Set("Cache-Control", "public, max-age=60")
		h.Set("Vary", "Origin") // the service's CORS layer says the answer may vary by Origin
		if r.Header.Get("If-None-Match") == cat.ETag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(cat.JSON)))
		_, _ = w.Write(cat.JSON)
	})
}

// bench is one run: the services it started, and the scenarios it measures.
type bench struct {
	ctx      context.Context
	s        settings
	stderr   io.Writer
	adminURL string // TEST_DATABASE_URL
	dbURL    string // the benchmarked service's database
	svc      *service
	bareAddr string
	cat      *tools.Catalog
	basePool *postgres.DB
	tmp      string       // holds the serve binary and the Node peer's files
	bin      *serveBinary // built when a scenario needs it
	nodeRows []deployedRow
}

// pending is a scenario to build just before it is measured; what it started is stopped
// after.
type pending struct {
	name  string
	build func() (scenario, func(), error)
}

func realMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	s, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if s.writeSite != "" {
		if err := os.Mkdir(s.writeSite, 0o755); err != nil {
			return err
		}
		return writeScaleCorpus(s.writeSite, scalePages)
	}
	rep := report{started: time.Now()}
	b := &bench{ctx: ctx, s: s, stderr: stderr, adminURL: os.Getenv("TEST_DATABASE_URL")}
	if b.adminURL == "" {
		return errors.New("TEST_DATABASE_URL is not set: run `make bench`, which starts PostgreSQL with pgvector")
	}
	stop, err := b.setup()
	if err != nil {
		return err
	}
	defer stop()
	selected, deployed := b.selected()
	runRate, runHNSW, runTokens := s.run.MatchString(rateName), s.run.MatchString(hnswName), s.run.MatchString(tokensName)
	if len(selected) == 0 && len(deployed) == 0 && !runRate && !runHNSW && !runTokens && !anySection(s) {
		return fmt.Errorf("no scenario matches -run %q", s.run)
	}
	if s.cpuprofile != "" {
		stopProfile, err := startProfile(s.cpuprofile)
		if err != nil {
			return err
		}
		defer stopProfile()
	}
	if runTokens {
		// First, on a quiet process: it times single calls.
		if rep.tokens, err = measureTokens(); err != nil {
			return fmt.Errorf("%s: %w", tokensName, err)
		}
	}
	rep.command, rep.s, rep.catalog = command(b.adminURL, args), s, len(b.cat.JSON)
	if err := b.measureAll(&rep, selected, deployed, runRate); err != nil {
		return err
	}
	if err := b.runSections(&rep); err != nil {
		return err
	}
	// Last, so that building the index cannot disturb the load scenarios' rounds.
	if runHNSW {
		if rep.hnsw, err = measureHNSW(ctx, b.adminURL, s.hnsw, stderr); err != nil {
			return fmt.Errorf("%s: %w", hnswName, err)
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	rep.took = time.Since(rep.started)
	text := rep.text()
	fmt.Fprint(stdout, text)
	if s.out != "" {
		path, err := writeDoc(s.out, text)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %s\n", path)
	}
	return rep.failures(s.strict)
}

// setup prepares the database and starts the service, the bare baseline and the
// baseline's pool; stop stops them.
func (b *bench) setup() (stop func(), err error) {
	var stops stack
	stop = stops.run
	defer func() {
		if err != nil {
			stop()
		}
	}()
	setupCtx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if b.dbURL, err = prepareDatabase(setupCtx, b.adminURL); err != nil {
		return nil, err
	}
	// Sides are labelled in CPU profiles only: the hook costs a little per request.
	subjectLabel, baselineLabel := "", ""
	if b.s.cpuprofile != "" {
		subjectLabel, baselineLabel = "sitetools", "net/http"
	}
	if b.svc, err = startService(setupCtx, b.dbURL, subjectLabel); err != nil {
		return nil, err
	}
	stops.push(b.svc.close)
	b.cat = b.svc.svc.HTTP.Registry().Catalog()
	bare, bareAddr, err := serve(bareCatalog(b.cat), baselineLabel)
	if err != nil {
		return nil, err
	}
	b.bareAddr = bareAddr
	stops.push(func() { shutdown(bare) })
	// The search baseline's pool: opened as the service opens its own.
	if b.basePool, err = postgres.Open(setupCtx, b.dbURL, b.svc.cfg.DatabaseMaxConns); err != nil {
		return nil, err
	}
	stops.push(b.basePool.Close)
	if b.tmp, err = os.MkdirTemp("", "sitetools-bench-"); err != nil {
		return nil, err
	}
	stops.push(func() { os.RemoveAll(b.tmp) })
	return stop, nil
}

// needBin builds the serve binary once, when a scenario needs it.
func (b *bench) needBin() (*serveBinary, error) {
	if b.bin != nil {
		return b.bin, nil
	}
	var err error
	b.bin, err = buildServe(b.ctx, b.tmp, b.dbURL, b.stderr)
	return b.bin, err
}

// selected returns the scenarios -run selects, in the order they run: the in-process
// ones, then those on subprocesses; and the as-deployed cases.
func (b *bench) selected() ([]pending, []deployedCase) {
	static := func(sc scenario) pending {
		return pending{sc.name, func() (scenario, func(), error) { return sc, nil, nil }}
	}
	var all []pending
	for _, sc := range scenarios(b.svc.addr, b.bareAddr, b.cat) {
		all = append(all, static(sc))
	}
	for _, c := range b.s.searchConns {
		all = append(all, pending{searchScenarioName(c), func() (scenario, func(), error) {
			sc, err := searchScenario(b.ctx, b.svc, b.basePool, c)
			return sc, nil, err
		}})
	}
	all = append(all, static(mcpListScenario(b.svc)))
	mcpConns := slices.Min(b.s.searchConns)
	all = append(all, pending{mcpSearchName(mcpConns), func() (scenario, func(), error) {
		sc, err := mcpSearchScenario(b.svc, mcpConns)
		return sc, nil, err
	}})
	all = append(all, pending{slotsName(), func() (scenario, func(), error) { return slotsScenario(b.ctx, b.adminURL) }})
	all = append(all, pending{nodeName, func() (scenario, func(), error) {
		bin, err := b.needBin()
		if err != nil {
			return scenario{}, nil, err
		}
		peer, err := preparePeer(b.ctx, b.stderr)
		if err != nil {
			return scenario{}, nil, err
		}
		return nodeScenario(b.ctx, bin, peer, b.tmp, &b.nodeRows)
	}})
	var selected []pending
	for _, p := range all {
		if b.s.run.MatchString(p.name) {
			selected = append(selected, p)
		}
	}
	var deployed []deployedCase
	for _, c := range deployedCases(b.s) {
		if b.s.run.MatchString(deployedPrefix + c.name) {
			deployed = append(deployed, c)
		}
	}
	return selected, deployed
}

// measureAll measures the selected scenarios, then the as-deployed cases and the rate
// limit's, into rep.
func (b *bench) measureAll(rep *report, selected []pending, deployed []deployedCase, runRate bool) error {
	for _, p := range selected {
		sc, teardown, err := p.build()
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		res, err := measure(b.ctx, sc, b.s, b.stderr)
		if teardown != nil {
			teardown()
		}
		if err != nil {
			return fmt.Errorf("%s: %w", sc.name, err)
		}
		rep.results = append(rep.results, res)
		if p.name == nodeName {
			addNodeRows(b.nodeRows, res, cmp.Or(sc.conns, b.s.conns))
		}
	}
	for _, c := range deployed {
		bin, err := b.needBin()
		if err != nil {
			return err
		}
		row, err := runDeployed(b.ctx, bin, c, b.s, b.stderr)
		if err != nil {
			return fmt.Errorf("%s%s: %w", deployedPrefix, c.name, err)
		}
		rep.deployed = append(rep.deployed, row)
	}
	rep.deployed = append(rep.deployed, b.nodeRows...)
	if runRate {
		bin, err := b.needBin()
		if err != nil {
			return err
		}
		if rep.rate, err = rateScenario(b.ctx, bin, b.s.rounds, b.stderr); err != nil {
			return fmt.Errorf("%s: %w", rateName, err)
		}
		rep.deployed = append(rep.deployed, rep.rate.row)
	}
	rep.bin = b.bin
	return nil
}

// startProfile writes a CPU profile to path until the returned function is called.
func startProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// failures are the run's errors and, with strict, its missed goals.
func (rep *report) failures(strict bool) error {
	var errs []error
	for _, r := range rep.deployed {
		if r.errors > 0 {
			errs = append(errs, fmt.Errorf("%s%s (%s): %d errors (first: %v)", deployedPrefix, r.name, r.process, r.errors, r.firstErr))
		}
	}
	if r := rep.rate; strict && r != nil && !r.pass() {
		errs = append(errs, fmt.Errorf("%s: the polite client misses its goal", rateName))
	}
	for _, r := range rep.results {
		if n := r.subject.errors + r.baseline.errors; n > 0 {
			errs = append(errs, fmt.Errorf("%s: %d errors (first: %v)", r.sc.name, n, cmpErr(r.subject.firstErr, r.baseline.firstErr)))
		}
		if strict && !r.pass() {
			errs = append(errs, fmt.Errorf("%s: ratio %.2f misses the goal %s", r.sc.name, r.ratio(), r.goalText()))
		}
	}
	for _, r := range rep.tokens {
		if strict && !r.pass() {
			errs = append(errs, fmt.Errorf("%s, %s: median %s misses the goal %s", tokensName, r.name, r.median, tokensGoal))
		}
	}
	for _, sec := range rep.sections {
		for _, m := range sec.missed {
			if strict {
				errs = append(errs, errors.New(m))
			}
		}
	}
	for _, h := range rep.hnsw {
		if strict && !h.pass() {
			errs = append(errs, fmt.Errorf("%s, %s: recall@10 %.3f at the service's ef_search %d misses the goal %.2f",
				hnswName, h.d.key, h.service().recall, h.serviceEF, recallGoal))
		}
	}
	return errors.Join(errs...)
}
