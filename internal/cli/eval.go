package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/sitetools/sitetools/internal/app"
	"github.com/sitetools/sitetools/internal/config"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/searcheval"
)

// evalFlags are what `sitetools eval` is asked.
type evalFlags struct {
	file        string
	json        bool
	minHit3     float64
	candidate   bool
	candidateDB string
}

func parseEvalFlags(args []string, stderr io.Writer) (evalFlags, error) {
	var f evalFlags
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.BoolVar(&f.json, "json", false, "print the report as one JSON document")
	fs.Float64Var(&f.minHit3, "min-hit3", 0, "exit non-zero when hit@3 (a fraction, e.g. 0.8) of an index is below this")
	fs.BoolVar(&f.candidate, "candidate", false, "also measure the index a rebuild for another model is making beside the live one, and compare")
	fs.StringVar(&f.candidateDB, "candidate-database", "", "also measure the index in this database (postgres://…), and compare")
	// The file may come before the flags or after them.
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			return f, usageError{err.Error()}
		}
		if fs.NArg() == 0 {
			break
		}
		files, args = append(files, fs.Arg(0)), fs.Args()[1:]
	}
	switch {
	case len(files) != 1:
		return f, usageError{"eval needs one questions file: sitetools eval questions.yaml [--json] [--min-hit3 0.8] [--candidate | --candidate-database URL]"}
	case f.minHit3 < 0 || f.minHit3 > 1:
		return f, usageError{"--min-hit3 is a fraction from 0 to 1, e.g. 0.8 for 80%"}
	case f.candidate && f.candidateDB != "":
		return f, usageError{"eval takes --candidate or --candidate-database, not both"}
	}
	f.file = files[0]
	return f, nil
}

// evalCmd runs the owner's questions through the search and prints how often the expected
// pages came first and among the first three. It writes nothing but the report to stdout:
// the questions reach no log, metric or table.
func evalCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseEvalFlags(args, stderr)
	if err != nil {
		return err
	}
	questions, err := readQuestions(f.file)
	if err != nil {
		return err
	}
	cfg, err := configFor(config.AreaDatabase, config.AreaEmbeddings, config.AreaSearch, config.AreaFairUse)
	if err != nil {
		return err
	}
	logger := newLogger(stderr, cfg.LogLevel)
	db, err := openSearchDB(ctx, cfg, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	ev, err := app.NewEvaluation(ctx, cfg, db, logger)
	if err != nil {
		return err
	}
	defer ev.Close()
	live, err := newEvalTarget(ctx, ev, ev.Index(), "live", "")
	if err != nil {
		return err
	}
	if err := checkPages(ctx, f.file, questions, live); err != nil {
		return err
	}
	cand, closeCand, err := candidateTarget(ctx, cfg, ev, f, logger)
	if err != nil {
		return err
	}
	defer closeCand()
	if cand != nil {
		if err := checkPages(ctx, f.file, questions, cand); err != nil {
			return err
		}
	}
	report, err := runEval(ctx, ev, f.file, questions, live, cand)
	if err != nil {
		return err
	}
	if f.json {
		if err := report.WriteJSON(stdout); err != nil {
			return err
		}
	} else {
		report.WriteText(stdout)
	}
	return checkMinHit3(report, f.minHit3)
}

func readQuestions(name string) ([]searcheval.Question, error) {
	file, err := os.Open(name)
	if err != nil {
		return nil, usageError{fmt.Sprintf("eval: %v", err)}
	}
	defer file.Close()
	qs, err := searcheval.Parse(name, file)
	if _, ok := errors.AsType[*searcheval.FileError](err); ok {
		return nil, usageError{err.Error()}
	}
	return qs, err
}

// openSearchDB opens a pool on url with the search's settings (SEARCH_EF_SEARCH…) and
// checks that its schema is current.
func openSearchDB(ctx context.Context, cfg config.Config, url string) (*postgres.DB, error) {
	db, err := postgres.Open(ctx, url, 4, app.VectorSearch(cfg))
	if err != nil {
		return nil, err
	}
	if err := db.Ready(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("database: %w", err)
	}
	return db, nil
}

// evalTarget is an index to measure, and how to search it.
type evalTarget struct {
	column searcheval.Column
	index  *postgres.SiteIndex
	search searcheval.Searcher
}

func newEvalTarget(ctx context.Context, ev *app.Evaluation, index *postgres.SiteIndex, name, note string) (*evalTarget, error) {
	search, m, err := ev.Searcher(ctx, index)
	if err != nil {
		return nil, fmt.Errorf("the %s index: %w", name, err)
	}
	return &evalTarget{column: searcheval.Column{Name: name, Index: m.String(), Note: note}, index: index, search: search}, nil
}

// checkPages refuses a file that names a page the target's index does not hold.
func checkPages(ctx context.Context, file string, qs []searcheval.Question, t *evalTarget) error {
	err := searcheval.CheckPages(ctx, file, qs, app.HasPage(t.index))
	if fe, ok := errors.AsType[*searcheval.FileError](err); ok {
		if t.column.Name != "live" {
			return usageError{fmt.Sprintf("the %s index: %v", t.column.Name, fe)}
		}
		return usageError{fe.Error()}
	}
	return err
}

// candidateTarget is the index to compare with: the rebuild's beside the live one
// (--candidate) or a second database's (--candidate-database); nil without either.
func candidateTarget(ctx context.Context, cfg config.Config, ev *app.Evaluation, f evalFlags, logger *slog.Logger) (*evalTarget, func(), error) {
	none := func() {}
	switch {
	case f.candidateDB != "":
		db, err := openSearchDB(ctx, cfg, f.candidateDB)
		if err != nil {
			return nil, none, fmt.Errorf("--candidate-database: %w", err)
		}
		t, err := newEvalTarget(ctx, ev, postgres.NewSiteIndex(db, cfg.Embeddings.Dimensions), "candidate", "in the database of --candidate-database")
		if err != nil {
			db.Close()
			return nil, none, err
		}
		return t, db.Close, nil
	case f.candidate:
		idx, m, ok, err := ev.Index().Candidate(ctx)
		if err != nil {
			return nil, none, err
		}
		if !ok {
			return nil, none, usageError{"--candidate: no rebuild for another model is under way or stopped in this database. " +
				"Start one with the new EMBEDDINGS_* settings (sitetools ingest --reindex, or POST /admin/reindex {\"all\": true}), " +
				"or compare with an index built in a second database: --candidate-database URL"}
		}
		note := "the rebuild beside the live index"
		if p, ok, err := ev.Index().RebuildProgress(ctx); err == nil && ok && p.Done < p.Total {
			note = fmt.Sprintf("the rebuild beside the live index, %d of %d chunks made so far (the others are found by their words alone)", p.Done, p.Total)
		}
		logger.Debug("measuring the rebuild beside the live index", "model", m.String())
		t, err := newEvalTarget(ctx, ev, idx, "candidate", note)
		return t, none, err
	}
	return nil, none, nil
}

// runEval asks every question of the live index, then of the candidate, and tells what
// each cost.
func runEval(ctx context.Context, ev *app.Evaluation, file string, qs []searcheval.Question, live, cand *evalTarget) (searcheval.Report, error) {
	report := searcheval.Report{File: file, Questions: qs}
	var before searcheval.Cost
	for _, t := range []*evalTarget{live, cand} {
		if t == nil {
			continue
		}
		runs, err := searcheval.Evaluate(ctx, qs, t.search)
		if _, ok := errors.AsType[*searcheval.Refused](err); ok {
			return report, usageError{fmt.Sprintf("questions file %s: %v", file, err)}
		}
		if err != nil {
			return report, err
		}
		after, err := ev.Cost()
		if err != nil {
			return report, err
		}
		t.column.Runs, t.column.Cost = runs, costSince(before, after)
		before = after
	}
	report.Live = live.column
	if cand != nil {
		report.Candidate = &cand.column
	}
	return report, nil
}

func costSince(before, after searcheval.Cost) searcheval.Cost {
	return searcheval.Cost{ProviderCalls: after.ProviderCalls - before.ProviderCalls, Failed: after.Failed - before.Failed,
		Tokens: after.Tokens - before.Tokens, CostUSD: after.CostUSD - before.CostUSD, CacheHits: after.CacheHits - before.CacheHits}
}

// checkMinHit3 fails when an index's hit@3 is below min (0: no threshold).
func checkMinHit3(r searcheval.Report, min float64) error {
	if min <= 0 {
		return nil
	}
	var below []string
	cols := []searcheval.Column{r.Live}
	if r.Candidate != nil {
		cols = append(cols, *r.Candidate)
	}
	for _, c := range cols {
		s := searcheval.ScoreRuns(c.Runs).All
		// A rate equal to the threshold (16 of 20 for 0.8) reaches it, whatever the float error.
		if s.Hit3Rate() < min-1e-9 {
			below = append(below, fmt.Sprintf("hit@3 of the %s index is %.1f%% (%d of %d), below --min-hit3 %g", c.Name, 100*s.Hit3Rate(), s.Hit3, s.N, min))
		}
	}
	if len(below) > 0 {
		return errors.New(strings.Join(below, "; "))
	}
	return nil
}
