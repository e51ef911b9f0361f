// Package cli is the sitetools command line: it parses subcommands and wires the
// service together.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"

	"github.com/sitetools/sitetools/internal/config"
	"github.com/sitetools/sitetools/internal/logs"
	"github.com/sitetools/sitetools/internal/pdftext"

	"github.com/sitetools/sitetools/internal/app"
	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/postgres"
)

// version is set at build time with -ldflags "-X github.com/sitetools/sitetools/internal/cli.version=v1.2.3".
var version = ""

const usage = `usage: sitetools <command> [flags]

commands:
  serve      run the service (configuration from the environment, see README)
  migrate    apply pending database migrations (DATABASE_URL)
  ingest     index the site's pages: --dir PATH --base-url URL, or --sitemap URL [--reindex]
  usage      paid usage and budgets of the last days [--days N]
  report     answer ratings, searches that found nothing, hand-overs and page coverage
             of the last days [--days N] [--format text|json|markdown]
  prune      apply the retention now (serve does it every hour)
  eval       measure the search with your own questions: eval FILE [--json] [--min-hit3 0.8]
             [--candidate | --candidate-database URL]
  appointments add|list|cancel   manage bookings (busy time for get_free_slots)
  pdf-cache  compile the PDF reader into PDF_CACHE_DIR (an image build does, so that serve
             only loads it)
  version    print the version
`

// usageError is a mistake on the command line: exit code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// ExitCode is the process exit code for err: 2 for usage mistakes, 1 otherwise.
func ExitCode(err error) int {
	var u usageError
	if errors.As(err, &u) {
		return 2
	}
	return 1
}

// Run runs the command named by args[0].
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usageError{"no command given"}
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return serve(ctx, rest, stderr)
	case "migrate":
		return migrate(ctx, rest, stdout)
	case "ingest":
		return ingest(ctx, rest, stdout, stderr)
	case "appointments":
		return appointmentsCmd(ctx, rest, stdout, stderr)
	case "usage":
		return usageCmd(ctx, rest, stdout)
	case "report":
		return reportCmd(ctx, rest, stdout)
	case "prune":
		return pruneCmd(ctx, rest, stdout)
	case "eval":
		return evalCmd(ctx, rest, stdout, stderr)
	case "pdf-cache":
		if err := noFlags("pdf-cache", rest); err != nil {
			return err
		}
		if err := pdftext.Default().Prepare(); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "PDFium is compiled into PDF_CACHE_DIR (or the user's cache directory)")
		return nil
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "sitetools", Version())
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return usageError{fmt.Sprintf("unknown command %q", cmd)}
}

// Version is the build's version: the -ldflags value, else the module version.
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

func noFlags(name string, args []string) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return usageError{fmt.Sprintf("%s takes no arguments", name)}
	}
	return nil
}

func serve(ctx context.Context, args []string, stderr io.Writer) error {
	if err := noFlags("serve", args); err != nil {
		return err
	}
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		return fmt.Errorf("configuration:\n  %s", strings.ReplaceAll(err.Error(), "\n", "\n  "))
	}
	cfg.Version = Version()
	logger := newLogger(stderr, cfg.LogLevel)
	// The request lines still buffered are written before the process ends.
	defer logger.Handler().(*logs.JSON).Flush()
	// Load the tokenizer now rather than on the first query.
	if err := llm.LoadTokenizer(); err != nil {
		logger.Warn("token estimates fall back to a character count", "err", err.Error())
	}
	svc, err := app.Build(ctx, cfg, app.Options{Logger: logger})
	if err != nil {
		return err
	}
	defer svc.Close()
	chatMode := "retrieval-only (no LLM_BASE_URL)"
	if cfg.Chat.LLMBaseURL != "" {
		chatMode = "llm, tool mode " + cfg.Chat.ToolMode
	}
	logger.Info("starting", "version", Version(), "tools", len(svc.HTTP.Registry().Tools()), "chat", chatMode)
	return svc.Run(ctx)
}

// pruneCmd applies the retention once, waiting for a run under way elsewhere to end.
func pruneCmd(ctx context.Context, args []string, stdout io.Writer) error {
	if err := noFlags("prune", args); err != nil {
		return err
	}
	cfg, db, err := openFor(ctx, 2, config.AreaRetention)
	if err != nil {
		return err
	}
	defer db.Close()
	p, err := db.Prune(ctx, app.Retention(cfg.Retention), true)
	if err != nil {
		return err
	}
	r := cfg.Retention
	rule := func(n int, format string) string {
		if n == 0 {
			return "kept"
		}
		return fmt.Sprintf(format, n)
	}
	fmt.Fprintf(stdout, "%-17s %8d deleted  (%s)\n", "ledger", p.Ledger, rule(r.LedgerDays, "older than %d days"))
	fmt.Fprintf(stdout, "%-17s %8d deleted  (%s)\n", "budgets", p.Budgets, rule(r.LedgerDays, "older than %d days"))
	fmt.Fprintf(stdout, "%-17s %8d deleted  (%s; %s)\n", "embedding_cache", p.EmbeddingCache,
		rule(r.EmbeddingCacheDays, "unused for %d days"), rule(r.EmbeddingCacheMaxRows, "at most %d rows"))
	fmt.Fprintf(stdout, "%-17s %8d deleted  (expired)\n", "idempotency_keys", p.Idempotency)
	fmt.Fprintf(stdout, "%-17s %8d deleted  (answer ids expired)\n", "rated_answers", p.RatedAnswers)
	return nil
}

func migrate(ctx context.Context, args []string, stdout io.Writer) error {
	if err := noFlags("migrate", args); err != nil {
		return err
	}
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		return errors.New("configuration:\n  DATABASE_URL is required")
	}
	v, err := postgres.Migrate(ctx, url)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "database schema at version %d\n", v)
	return nil
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(logs.NewJSON(w, l))
}
