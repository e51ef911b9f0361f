package main

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/internal/postgres"
)

// The ingest section (runScaleIngest): the real `sitetools ingest` binary, run as a
// subprocess on the generated site, from a directory and over a sitemap, with the offline
// local embedder and with a fake OpenAI-compatible provider that counts its requests; each
// first ingest into an empty database, then again with nothing changed.

const (
	scaleSitemapPages = 2_000
	// scaleBatch is EMBEDDINGS_BATCH_SIZE's default, the BatchSize ingest uses.
	scaleBatch = 32
	// scaleFakeModel is the model name the fake provider is configured with.
	scaleFakeModel  = "fake-embed"
	scalePagesGoal  = 200.0     // pages per second, from the directory with the local embedder
	scaleRSSGoal    = 300 << 20 // peak RSS of an ingest
	scaleReingestX  = 10.0      // an unchanged re-ingest at least this many times faster
	scaleBodiesGoal = 5.0       // per cent of the page bodies an unchanged re-ingest over a sitemap downloads again
)

// scaleIngestCase is one kind of ingest: its source, embedder and database.
type scaleIngestCase struct {
	label   string
	db      string
	sitemap bool
	lastmod bool // the sitemap gives each page's <lastmod>
	fake    bool
	pages   int
	gated   bool // the pages-per-second goal is judged on it
}

func scaleIngestCases() []scaleIngestCase {
	return []scaleIngestCase{
		{label: "--dir, local embedder", db: scaleDatabase, pages: scalePages, gated: true},
		{label: "--dir, fake provider", db: scaleDatabase + "_fake", pages: scalePages, fake: true},
		{label: "--sitemap with lastmod, fake provider", db: scaleDatabase + "_sitemap", pages: scaleSitemapPages, sitemap: true, lastmod: true, fake: true},
		{label: "--sitemap without lastmod (304s), fake provider", db: scaleDatabase + "_sitemap", pages: scaleSitemapPages, sitemap: true, fake: true},
		{label: "--sitemap with lastmod, local embedder", db: scaleDatabase + "_sitemap", pages: scaleSitemapPages, sitemap: true, lastmod: true},
	}
}

// scaleIngestRun is one run of the binary.
type scaleIngestRun struct {
	wall, cpu time.Duration
	rss       int64
	build     time.Duration // how long CREATE INDEX was seen running in its database
	vocab     time.Duration // how long the rebuild of the typo vocabulary was
	finish    time.Duration // how long either was seen running (they run side by side)
	st        scaleIngestStats
	requests  []int // fake provider: inputs of each request received during the run
	bodies    int64 // sitemap: page bodies the site served during the run (not 304s)
}

// scaleIngestStats is what ingest prints: sitesearch.IngestStats.
type scaleIngestStats struct {
	pages, unchanged, embedded, calls int
}

var scaleStatsRE = regexp.MustCompile(`(\d+) pages: \d+ added, \d+ updated, (\d+) unchanged, \d+ removed, \d+ failed; (\d+) chunks embedded in (\d+) calls`)

func parseIngestStats(out string) (scaleIngestStats, error) {
	m := scaleStatsRE.FindStringSubmatch(out)
	if m == nil {
		return scaleIngestStats{}, fmt.Errorf("no statistics in the output of ingest: %.300q", out)
	}
	n := make([]int, len(m)-1)
	for i := range n {
		n[i], _ = strconv.Atoi(m[i+1])
	}
	return scaleIngestStats{pages: n[0], unchanged: n[1], embedded: n[2], calls: n[3]}, nil
}

// scaleIngestRow is a case's two runs and what the database held after the first.
type scaleIngestRow struct {
	c            scaleIngestCase
	first, again scaleIngestRun
	chunks       int
}

// scaleIngester runs the cases: the binary, the generated site as a directory and over
// HTTP, and the fake provider.
type scaleIngester struct {
	env     sectionEnv
	bin     *serveBinary
	dir     string
	site    *scaleSite
	fake    *llmtest.Server
	dbNames map[string]bool
}

func runScaleIngest(ctx context.Context, env sectionEnv) (_ sectionResult, err error) {
	defer func() { scaleFinished(env, scaleIngestName, err != nil) }()
	in := &scaleIngester{env: env, dbNames: map[string]bool{}}
	// The directory with the local embedder stays, for the search section; the others
	// go, whatever happened.
	defer func() {
		for name := range in.dbNames {
			if name == scaleDatabase {
				continue
			}
			if derr := dropDatabase(ctx, env.adminURL, name); derr != nil && err == nil {
				err = derr
			}
		}
	}()
	tmp, err := os.MkdirTemp("", "sitetools-bench-ingest-")
	if err != nil {
		return sectionResult{}, err
	}
	defer os.RemoveAll(tmp)
	if in.bin, err = buildServe(ctx, tmp, "", env.stderr); err != nil {
		return sectionResult{}, err
	}
	if in.dir, err = scaleCorpusDir(env.stderr); err != nil {
		return sectionResult{}, err
	}
	in.site = startScaleSite(scaleSitemapPages)
	defer in.site.srv.Close()
	if in.fake, err = llmtest.StartServer(hnswDims); err != nil {
		return sectionResult{}, err
	}
	defer in.fake.Close()
	var rows []scaleIngestRow
	for _, c := range scaleIngestCases() {
		row, err := in.measure(ctx, c)
		if err != nil {
			return sectionResult{}, fmt.Errorf("%s: %w", c.label, err)
		}
		rows = append(rows, row)
	}
	return scaleIngestReport(rows, in.bin), nil
}

// measure runs a case: a first ingest into a fresh database, then an unchanged one.
func (in *scaleIngester) measure(ctx context.Context, c scaleIngestCase) (scaleIngestRow, error) {
	row := scaleIngestRow{c: c}
	url, err := freshDatabase(ctx, in.env.adminURL, c.db)
	if err != nil {
		return row, err
	}
	in.dbNames[c.db] = true
	fmt.Fprintf(in.env.stderr, "%s, %s: first ingest of %s pages\n", scaleIngestName, c.label, thousands(c.pages))
	if row.first, err = in.run(ctx, c, url); err != nil {
		return row, err
	}
	db, err := postgres.Open(ctx, url, 2)
	if err != nil {
		return row, err
	}
	defer db.Close()
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM chunks`).Scan(&row.chunks); err != nil {
		return row, err
	}
	if c.db == scaleDatabase {
		m := scaleMeta{generator: scaleBuildKey(), pages: row.first.st.pages, chunks: row.chunks, took: row.first.wall,
			how: "`sitetools ingest --dir` (local embedder) by the ingest section"}
		if err := writeScaleMeta(ctx, db, m); err != nil {
			return row, err
		}
	}
	fmt.Fprintf(in.env.stderr, "%s, %s: unchanged re-ingest\n", scaleIngestName, c.label)
	row.again, err = in.run(ctx, c, url)
	return row, err
}

// run runs the binary once, with a source and an embedder as the case says, and reads
// what it did: its output, its peak RSS and CPU time, the provider's requests.
func (in *scaleIngester) run(ctx context.Context, c scaleIngestCase, dbURL string) (scaleIngestRun, error) {
	var r scaleIngestRun
	args := []string{"ingest", "--dir", in.dir, "--base-url", scaleBaseURL}
	if c.sitemap {
		args = []string{"ingest", "--sitemap", in.site.srv.URL + "/sitemap-nolastmod.xml"}
		if c.lastmod {
			args[2] = in.site.srv.URL + "/sitemap.xml"
		}
	}
	cmd := exec.CommandContext(ctx, in.bin.path, args...)
	cmd.Env = in.processEnv(c, dbURL)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	before, bodies := len(in.fake.Requests()), in.site.bodies.Load()
	stopWatch := watchStatements(ctx, dbURL, &r.build, &r.vocab, &r.finish)
	begin := time.Now()
	err := cmd.Run()
	r.wall = time.Since(begin)
	r.bodies = in.site.bodies.Load() - bodies
	stopWatch()
	if err != nil {
		return r, fmt.Errorf("sitetools ingest: %w\n%.2000s", err, stderr.String())
	}
	r.rss = peakRSS(cmd.ProcessState)
	r.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if c.fake {
		r.requests = in.fake.Requests()[before:]
	}
	r.st, err = parseIngestStats(stdout.String())
	return r, err
}

// processEnv is the subprocess's whole environment: the database, the embedder, and for
// a sitemap on loopback the one private range it may fetch from.
func (in *scaleIngester) processEnv(c scaleIngestCase, dbURL string) []string {
	vars := map[string]string{"DATABASE_URL": dbURL, "LOG_LEVEL": "warn", "PATH": os.Getenv("PATH")}
	if h := os.Getenv("HOME"); h != "" {
		vars["HOME"] = h
	}
	if c.fake {
		vars["EMBEDDINGS_PROVIDER"] = "openai"
		vars["EMBEDDINGS_BASE_URL"] = in.fake.BaseURL()
		vars["EMBEDDINGS_MODEL"] = scaleFakeModel
		vars["EMBEDDINGS_DIMENSIONS"] = strconv.Itoa(hnswDims)
	}
	if c.sitemap {
		vars["FETCH_ALLOW_PRIVATE"] = "127.0.0.1/32"
	}
	env := make([]string, 0, len(vars))
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return env
}

// watchStatements adds to *build the time a CREATE INDEX is seen running in the database
// of dbURL, to *vocab the time the typo vocabulary's rebuild is, and to *either the time
// one of them or both are (they run side by side), polling every 50 ms, until the
// returned function is called.
func watchStatements(ctx context.Context, dbURL string, build, vocab, either *time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			return
		}
		defer conn.Close(context.WithoutCancel(ctx))
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		last := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				var b, v int
				err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE query ILIKE 'CREATE INDEX%'),
					count(*) FILTER (WHERE query ILIKE 'INSERT INTO search_vocabulary%')
					FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'`).Scan(&b, &v)
				if err == nil && b > 0 {
					*build += now.Sub(last)
				}
				if err == nil && v > 0 {
					*vocab += now.Sub(last)
				}
				if err == nil && b+v > 0 {
					*either += now.Sub(last)
				}
				last = now
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}

// scaleSite is the generated site over HTTP; it counts the page bodies it serves.
type scaleSite struct {
	srv    *httptest.Server
	bodies atomic.Int64
}

// startScaleSite serves the first n generated pages as HTML, each with an ETag and a
// Last-Modified and a 304 to a request that names either, and their sitemap, with each
// page's <lastmod> (/sitemap.xml) and without (/sitemap-nolastmod.xml), all rendered
// beforehand so that the server costs the ingest as little as it can.
func startScaleSite(n int) *scaleSite {
	const modified = "Wed, 13 Nov 2024 10:00:00 GMT"
	type page struct {
		html []byte
		etag string
	}
	pages := make(map[string]page, n)
	var sitemap, plain []byte
	site := &scaleSite{}
	site.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/sitemap.xml", "/sitemap-nolastmod.xml":
			w.Header().Set("Content-Type", "application/xml")
			_, _ = w.Write(map[bool][]byte{true: sitemap, false: plain}[r.URL.Path == "/sitemap.xml"])
			return
		}
		pg, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("ETag", pg.etag)
		w.Header().Set("Last-Modified", modified)
		if r.Header.Get("If-None-Match") == pg.etag || (r.Header.Get("If-None-Match") == "" && r.Header.Get("If-Modified-Since") == modified) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		site.bodies.Add(1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(pg.html)
	}))
	// The listener's address is known before the server starts: the pages and the sitemap
	// are ready before any request can read them.
	var b, p strings.Builder
	head := `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` + "\n"
	b.WriteString(head)
	p.WriteString(head)
	for i := range n {
		pg := scalePageAt(i)
		html := pg.html()
		pages["/"+pg.path] = page{html: html, etag: fmt.Sprintf(`"%08x"`, crc32.ChecksumIEEE(html))}
		fmt.Fprintf(&b, "<url><loc>http://%s/%s</loc><lastmod>2024-11-%02dT10:00:00Z</lastmod></url>\n", site.srv.Listener.Addr(), pg.path, 1+i%28)
		fmt.Fprintf(&p, "<url><loc>http://%s/%s</loc></url>\n", site.srv.Listener.Addr(), pg.path)
	}
	b.WriteString("</urlset>\n")
	p.WriteString("</urlset>\n")
	sitemap, plain = []byte(b.String()), []byte(p.String())
	site.srv.Start()
	return site
}
