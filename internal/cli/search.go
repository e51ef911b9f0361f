package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sitetools/sitetools/internal/config"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"

	"github.com/sitetools/sitetools/internal/app"
	"github.com/sitetools/sitetools/internal/budget"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// openFor loads the areas a command uses, the database among them, and opens a pool of
// conns connections, which the caller closes.
func openFor(ctx context.Context, conns int32, areas ...config.Area) (config.Config, *postgres.DB, error) {
	cfg, err := configFor(append(areas, config.AreaDatabase)...)
	if err != nil {
		return cfg, nil, err
	}
	db, err := postgres.Open(ctx, cfg.DatabaseURL, conns)
	return cfg, db, err
}

// configFor loads the areas of the configuration a command uses, and nothing else: a
// command that does not serve needs no admin token.
func configFor(areas ...config.Area) (config.Config, error) {
	cfg, err := config.Load(os.Getenv, append(areas, config.AreaLog)...)
	if err != nil {
		return cfg, fmt.Errorf("configuration:\n  %s", strings.ReplaceAll(err.Error(), "\n", "\n  "))
	}
	return cfg, nil
}

func ingest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ingest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "", "ingest the HTML and Markdown files under this directory")
	baseURL := fs.String("base-url", "", "with --dir: the site's URL that the directory's paths are under, e.g. https://example.com")
	sitemap := fs.String("sitemap", "", "ingest the pages listed by this sitemap (index, urlset, .xml.gz)")
	reindex := fs.Bool("reindex", false, "embed every chunk again beside the live vectors, then switch to them at once (needed to change the embedding model, dimension or prefixes); search answers meanwhile, and an interrupted run resumes")
	hold := fs.Bool("no-switch", false, "with --reindex: make the new vectors and stop before the switch, so that `sitetools eval --candidate` can measure them beside the live ones; --reindex again switches at once")
	drop := fs.Bool("drop-rebuild", false, "forget the new vectors of a rebuild under way, stopped or held (--no-switch), and do nothing else")
	concurrency := fs.Int("concurrency", 4, "with --sitemap: pages fetched at once")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if *drop {
		return dropRebuild(ctx, fs.NArg() > 0 || *dir != "" || *sitemap != "" || *reindex, stdout)
	}
	if *hold && !*reindex {
		return usageError{"--no-switch goes with --reindex"}
	}
	if fs.NArg() > 0 || (*dir == "") == (*sitemap == "") {
		return usageError{"ingest needs exactly one of --dir PATH or --sitemap URL"}
	}
	if *dir != "" && *baseURL == "" {
		return usageError{"ingest --dir needs --base-url, the site's URL, e.g. --base-url https://example.com"}
	}
	cfg, db, err := openFor(ctx, 4, config.AreaEmbeddings, config.AreaFetch, config.AreaIngest)
	if err != nil {
		return err
	}
	defer db.Close()
	logger := newLogger(stderr, cfg.LogLevel)
	if err := db.Ready(ctx); err != nil {
		return fmt.Errorf("database: %w", err)
	}
	in, err := app.NewIngester(cfg.Embeddings, db, logger)
	if err != nil {
		return err
	}
	in.Reindex, in.HoldSwitch = *reindex, *hold
	if *reindex {
		// One sync at a time on any replica: serve's syncs wait while the vectors are made
		// again, and the run waits for one under way.
		release, err := postgres.NewIndexSyncs(db).LockSync(ctx, true, time.Second)
		if err != nil {
			return err
		}
		defer release()
	}

	start := time.Now()
	progress := &ingestProgress{out: stdout, start: start, last: start}
	in.Progress = progress.update
	var source string
	var st sitesearch.IngestStats
	if *sitemap != "" {
		source = "sitemap:" + *sitemap
		run := app.SitemapIngest{SitemapURL: *sitemap, Ingester: in, Concurrency: *concurrency, Started: progress.begin}
		st, err = run.Run(ctx, cfg, db, logger)
	} else {
		source, st, err = ingestDir(ctx, *dir, *baseURL, in, progress)
		if err == nil {
			app.StoreTokenRatio(ctx, cfg.Embeddings, db, in, st, logger)
		}
	}
	progress.done()
	if err != nil {
		return err
	}
	printIngested(stdout, source, in, st, time.Since(start))
	return nil
}

// dropRebuild is `ingest --drop-rebuild`: the rebuild's vectors are forgotten, the live
// index is untouched.
func dropRebuild(ctx context.Context, other bool, stdout io.Writer) error {
	if other {
		return usageError{"--drop-rebuild goes alone"}
	}
	_, db, err := openFor(ctx, 2)
	if err != nil {
		return err
	}
	defer db.Close()
	release, err := postgres.NewIndexSyncs(db).LockSync(ctx, true, time.Second)
	if err != nil {
		return err
	}
	defer release()
	index := postgres.NewSiteIndex(db, 0)
	p, ok, err := index.RebuildProgress(ctx)
	if err != nil || !ok {
		if err == nil {
			fmt.Fprintln(stdout, "no rebuild to drop")
		}
		return err
	}
	if err := index.DropRebuild(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "dropped the rebuild for %s (%d of %d chunks made); the live index is as it was\n", p.Model, p.Done, p.Total)
	return nil
}

// printIngested writes an ingest's summary: what a rebuild did (made and held, or
// switched to), then the pages and the embedding.
func printIngested(stdout io.Writer, source string, in *sitesearch.Ingester, st sitesearch.IngestStats, elapsed time.Duration) {
	r := st.Rebuild
	if in.HoldSwitch {
		fmt.Fprintf(stdout, "made the new vectors of %d chunks beside the live ones (%s) and held the switch: measure them with `sitetools eval --candidate FILE`, switch with `sitetools ingest --reindex` as now\n",
			r.Total, in.Model())
		return
	}
	if r.Switched {
		resumed := ""
		if r.Resumed {
			resumed = ", resumed"
		}
		fmt.Fprintf(stdout, "rebuilt the vectors of %d chunks beside the live ones and switched to them%s\n", r.Total, resumed)
	}
	fmt.Fprintf(stdout, "ingested %s (%s, %d dimensions) in %s: %s (%s)\n", source, in.Embedder.Model(), in.Embedder.Dimensions(),
		elapsed.Round(100*time.Millisecond), st, chunkRate(st.ChunksEmbedded, elapsed))
}

// ingestProgress shows how an ingest goes: a bar on a terminal, and elsewhere (a
// container's log) a line every progressEvery, so that a slow model is seen working.
// It starts once the number of pages is known.
type ingestProgress struct {
	out   io.Writer
	bar   *progressbar.ProgressBar // nil: not a terminal
	total int
	start time.Time
	last  time.Time // of the last line written
}

const progressEvery = 10 * time.Second

// begin learns the number of pages, and draws the bar on a terminal.
func (p *ingestProgress) begin(total int) {
	p.total = total
	if f, ok := p.out.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		p.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(f), progressbar.OptionSetDescription("ingesting"),
			progressbar.OptionShowCount(), progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(100*time.Millisecond))
	}
}

func (p *ingestProgress) update(st sitesearch.IngestStats) {
	now := time.Now()
	rate := chunkRate(st.ChunksEmbedded, now.Sub(p.start))
	if p.bar != nil {
		p.bar.Describe("ingesting, " + rate)
		_ = p.bar.Set(st.Pages)
		return
	}
	if now.Sub(p.last) >= progressEvery {
		p.last = now
		fmt.Fprintf(p.out, "ingesting: %d of %d pages read, %d chunks embedded (%s)\n", st.Pages, p.total, st.ChunksEmbedded, rate)
	}
}

func (p *ingestProgress) done() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

// chunkRate is n chunks over d, per second.
func chunkRate(n int, d time.Duration) string {
	if d <= 0 {
		return "0.0 chunks/s"
	}
	return fmt.Sprintf("%.1f chunks/s", float64(n)/d.Seconds())
}

// ingestDir ingests the files under dir as the pages of baseURL, and returns the
// source it names them by.
func ingestDir(ctx context.Context, dir, baseURL string, in *sitesearch.Ingester, progress *ingestProgress) (string, sitesearch.IngestStats, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", sitesearch.IngestStats{}, err
	}
	if _, err := url.Parse(baseURL); err != nil {
		return "", sitesearch.IngestStats{}, usageError{"--base-url is not a URL"}
	}
	progress.begin(countPages(abs))
	source := "dir:" + abs
	st, err := in.Sync(ctx, source, sitesearch.DirWalk(abs, baseURL))
	return source, st, err
}

// countPages counts the files ingest --dir will read, for the progress bar.
func countPages(root string) int {
	n := 0
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			switch strings.ToLower(filepath.Ext(p)) {
			case ".md", ".markdown", ".html", ".htm", ".pdf":
				n++
			}
		}
		return nil
	})
	return n
}

// printBudget writes one line of today's budget: its spend, its limit and, for a limited
// one, the paced ceiling and the visitors at their share.
func printBudget(ctx context.Context, w io.Writer, b *budget.Budget) error {
	today, err := b.Today(ctx)
	if err != nil {
		return err
	}
	if today.Limit == 0 {
		fmt.Fprintf(w, "%s budget %s: %d used, %d reserved, unlimited\n", today.Kind, today.Day, today.Used, today.Reserved)
		return nil
	}
	fmt.Fprintf(w, "%s budget %s: %d used, %d reserved, limit %d tokens, paced ceiling now %d", today.Kind, today.Day, today.Used, today.Reserved, today.Limit, today.PacedCeiling)
	if today.ClientShare > 0 {
		fmt.Fprintf(w, "; a visitor's share %d, reached by %d today", today.ClientShare, today.ClientsAtShare)
	}
	fmt.Fprintln(w)
	return nil
}

func usageCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("usage", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	days := fs.Int("days", 7, "days to report")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 || *days < 1 {
		return usageError{"usage takes only --days N"}
	}
	cfg, db, err := openFor(ctx, 2, config.AreaEmbeddings, config.AreaChat, config.AreaFairUse)
	if err != nil {
		return err
	}
	defer db.Close()
	printIndexStatus(ctx, db, stdout)
	for _, b := range []struct {
		kind  string
		limit int64
		share config.Share
	}{{"embedding", cfg.Embeddings.DailyTokenBudget, cfg.FairUse.EmbeddingsShare}, {"llm", cfg.Chat.DailyTokenBudget, cfg.FairUse.LLMShare}} {
		if err := printBudget(ctx, stdout, budget.New(db.Pool, budget.Options{Kind: b.kind, Limit: b.limit,
			Pacing: cfg.FairUse.Pacing, Burst: cfg.FairUse.Burst.Of(b.limit), ClientShare: b.share.Of(b.limit)})); err != nil {
			return err
		}
	}
	ledger := budget.NewLedger(db.Pool)
	rows, err := ledger.Report(ctx, *days)
	if err != nil {
		return err
	}
	// unknown: calls that may have reached the provider unanswered, charged at their
	// reservation; saved: calls not made because the provider's circuit was open.
	fmt.Fprintf(stdout, "%-10s  %-9s  %-8s  %-12s  %6s  %6s  %6s  %7s  %6s  %9s  %10s\n", "day", "kind", "channel", "tool", "calls", "cached", "errors", "unknown", "saved", "tokens", "cost USD")
	for _, r := range rows {
		fmt.Fprintf(stdout, "%-10s  %-9s  %-8s  %-12s  %6d  %6d  %6d  %7d  %6d  %9d  %10.6f\n", r.Day, r.Kind, r.Channel, r.Tool, r.Calls, r.CacheHits, r.Errors, r.Unknown, r.Saved, r.Tokens, r.CostUSD)
	}
	return nil
}
