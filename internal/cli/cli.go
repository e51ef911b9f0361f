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
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitetools/sitetools/internal/assistant"
	"github.com/sitetools/sitetools/internal/costguard"
	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/server"
	"github.com/sitetools/sitetools/tools"
	"github.com/sitetools/sitetools/tools/appointments"
)

// version is set at build time with -ldflags "-X github.com/sitetools/sitetools/internal/cli.version=v1.2.3".
var version = ""

const usage = `usage: sitetools <command> [flags]

commands:
  serve      run the service (configuration from the environment, see README)
  migrate    apply pending database migrations (DATABASE_URL)
  ingest     index the site's pages: --dir PATH --base-url URL, or --sitemap URL [--reindex]
  usage      paid usage and budgets of the last days [--days N]
  prune      apply the retention now (serve does it every hour)
  appointments add|list|cancel   manage bookings (busy time for get_free_slots)
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
	case "prune":
		return pruneCmd(ctx, rest, stdout)
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
	cfg, err := server.LoadConfig(os.Getenv)
	if err != nil {
		return fmt.Errorf("configuration:\n  %s", strings.ReplaceAll(err.Error(), "\n", "\n  "))
	}
	cfg.Version = Version()
	logger := newLogger(stderr, cfg.LogLevel)
	// Load the tokenizer now rather than on the first query.
	if err := llm.LoadTokenizer(); err != nil {
		logger.Warn("token estimates fall back to a character count", "err", err.Error())
	}
	db, err := postgres.Open(ctx, cfg.DatabaseURL, cfg.DatabaseMaxConns)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Ready(ctx); err != nil {
		// Serve anyway: /readyz reports it, and the service recovers when the database does.
		logger.Warn("database not ready", "err", err.Error())
	}
	reg := prometheus.NewRegistry()
	providerMetrics := costguard.NewProviderMetrics(reg)
	search, err := newSearch(ctx, cfg, db, logger, reg, providerMetrics)
	if err != nil {
		return err
	}
	avail, closeFeeds, err := newAvailability(ctx, cfg, db, logger)
	if err != nil {
		return err
	}
	defer closeFeeds()
	siteTools := search.tools
	var bookings *appointments.Bookings
	if avail != nil {
		t, err := avail.Tool()
		if err != nil {
			return err
		}
		siteTools = append(siteTools, t)
		bookings = appointments.NewBookings(db)
	}
	chat, persona, err := newChat(cfg.Chat, logger)
	if err != nil {
		return err
	}
	app, err := server.New(cfg, server.Options{
		DB: db, Logger: logger, Metrics: reg, Usage: usageWithLLM(search, db, cfg.Chat), Bookings: bookings,
		ChatProvider: chat, ChatPersona: persona, ProviderMetrics: providerMetrics,
		Register: func(r *tools.Registry) error {
			for _, t := range siteTools {
				if err := r.Add(t); err != nil {
					return err
				}
			}
			return nil
		},
	})
	if err != nil {
		return err
	}
	chatMode := "retrieval-only (no LLM_BASE_URL)"
	if chat != nil {
		chatMode = "llm, tool mode " + cfg.Chat.ToolMode
	}
	logger.Info("starting", "version", Version(), "tools", len(app.Registry().Tools()), "chat", chatMode)
	stopPruning := startPruning(ctx, db, cfg.Retention, logger, reg)
	defer stopPruning()
	return app.Run(ctx)
}

// pruneCmd applies the retention once, waiting for a run under way elsewhere to end.
func pruneCmd(ctx context.Context, args []string, stdout io.Writer) error {
	if err := noFlags("prune", args); err != nil {
		return err
	}
	cfg, err := configForTool()
	if err != nil {
		return err
	}
	db, err := postgres.Open(ctx, cfg.DatabaseURL, 2)
	if err != nil {
		return err
	}
	defer db.Close()
	p, err := db.Prune(ctx, cfg.Retention, true)
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
	return nil
}

// pruneInterval is how often serve applies the retention.
const pruneInterval = time.Hour

// startPruning applies the retention now and every pruneInterval, on whichever replica
// gets the lock, until the returned function is called; it waits for a run under way.
func startPruning(ctx context.Context, db *postgres.DB, r postgres.Retention, logger *slog.Logger, reg prometheus.Registerer) (stop func()) {
	deleted := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sitetools_retention_deleted_rows_total",
		Help: "Rows the retention deleted, by table.",
	}, []string{"table"})
	runs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sitetools_retention_runs_total",
		Help: "Retention runs by outcome: ok, busy (another replica held the lock) or error.",
	}, []string{"outcome"})
	reg.MustRegister(deleted, runs)
	for table := range (postgres.Pruned{}).Tables() {
		deleted.WithLabelValues(table)
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		db.PruneEvery(ctx, r, pruneInterval, func(p postgres.Pruned, err error) {
			switch {
			case errors.Is(err, postgres.ErrPruneBusy):
				runs.WithLabelValues("busy").Inc()
			case err != nil && ctx.Err() == nil:
				runs.WithLabelValues("error").Inc()
				logger.Warn("retention run failed", "err", err.Error())
			case err == nil:
				runs.WithLabelValues("ok").Inc()
				args := []any{}
				var total int64
				for table, n := range p.Tables() {
					deleted.WithLabelValues(table).Add(float64(n))
					args, total = append(args, table, n), total+n
				}
				if total > 0 {
					logger.Info("retention deleted rows", args...)
				}
			}
		})
	}()
	return func() { cancel(); <-done }
}

// maxPersonaBytes bounds CHAT_PERSONA_FILE: it is sent with every chat request.
const maxPersonaBytes = 16 << 10

// newChat returns the chat's model (nil without LLM_BASE_URL: retrieval-only answers)
// and the persona from CHAT_PERSONA_FILE ("" for the built-in one).
func newChat(cfg server.Chat, logger *slog.Logger) (assistant.Provider, string, error) {
	var persona string
	if cfg.PersonaFile != "" {
		b, err := os.ReadFile(cfg.PersonaFile)
		switch {
		case err != nil:
			return nil, "", fmt.Errorf("configuration:\n  CHAT_PERSONA_FILE cannot be read: %w", err)
		case len(b) > maxPersonaBytes:
			return nil, "", fmt.Errorf("configuration:\n  CHAT_PERSONA_FILE is %d bytes; at most %d are allowed (it is sent with every chat message)", len(b), maxPersonaBytes)
		case !utf8.Valid(b) || strings.TrimSpace(string(b)) == "":
			return nil, "", errors.New("configuration:\n  CHAT_PERSONA_FILE must be non-empty UTF-8 text")
		}
		persona = string(b)
	}
	if cfg.LLMBaseURL == "" {
		return nil, persona, nil
	}
	chat, err := llm.NewChat(llm.ChatOptions{BaseURL: cfg.LLMBaseURL, APIKey: cfg.LLMAPIKey, Model: cfg.LLMModel, Logger: logger})
	if err != nil {
		return nil, "", fmt.Errorf("chat: %w", err)
	}
	return chat, persona, nil
}

// usageWithLLM adds today's LLM budget to the usage report.
func usageWithLLM(search *searchParts, db *postgres.DB, cfg server.Chat) func(context.Context, int) (any, error) {
	budget := costguard.NewBudget(db.Pool, "llm", cfg.DailyTokenBudget, nil)
	return func(ctx context.Context, days int) (any, error) {
		r, err := search.report(ctx, days)
		if err != nil {
			return nil, err
		}
		report, ok := r.(usageReport)
		if !ok {
			return r, nil
		}
		today, err := budget.Today(ctx)
		if err != nil {
			return nil, err
		}
		report.Budgets = append(report.Budgets, today)
		return report, nil
	}
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
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}
