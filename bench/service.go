package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/sitetools/sitetools/internal/config"
	"github.com/sitetools/sitetools/internal/logs"

	"github.com/jackc/pgx/v5"

	"github.com/sitetools/sitetools/internal/app"
	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// benchDatabase is the database the benchmarked service runs on; it is created next to
// the one TEST_DATABASE_URL names and migrated on every run.
const benchDatabase = "sitetools_bench"

// prepareDatabase creates benchDatabase if it is missing, migrates it, and returns its URL.
func prepareDatabase(ctx context.Context, adminURL string) (string, error) {
	dbURL, err := createDatabase(ctx, adminURL, benchDatabase)
	if err != nil {
		return "", fmt.Errorf("prepareDatabase: %w", err)
	}
	if _, err := postgres.Migrate(ctx, dbURL); err != nil {
		return "", fmt.Errorf("prepareDatabase: %w", err)
	}
	return dbURL, nil
}

// createDatabase creates the database name next to the one adminURL names, unless it
// exists, and returns its URL.
func createDatabase(ctx context.Context, adminURL, name string) (string, error) {
	u, err := url.Parse(adminURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", errors.New("TEST_DATABASE_URL must be a postgres:// URL")
	}
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if !exists {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
			return "", err
		}
	}
	u.Path = "/" + name
	return u.String(), nil
}

// service is the real sitetools public API, built by app.Build as `sitetools serve` builds
// it (search tools included, on the demo site ingested as `make demo` does) and served on
// a loopback TCP port.
type service struct {
	svc    *app.Service
	db     *postgres.DB
	cfg    config.Config
	ingest sitesearch.IngestStats
	srv    *http.Server
	addr   string
}

// inProcessConfig is the configuration of the service the bench runs in its own
// process: the database at dbURL, no admin listener, no rate limit, the example schedule,
// and the variables of extra (nil: none) on top.
func inProcessConfig(root, dbURL string, extra map[string]string) (config.Config, error) {
	env := map[string]string{
		"DATABASE_URL":          dbURL,
		"LISTEN_ADDR":           "127.0.0.1:0",
		"ADMIN_LISTEN_ADDR":     "off",
		"RATE_LIMIT_PER_MINUTE": "0",
		"AVAILABILITY_CONFIG":   filepath.Join(root, slotsSchedule),
		// The load comes from one address: no client's share of the caps.
		"TOOL_MAX_CONCURRENT_PER_CLIENT": "0",
		"CHAT_MAX_CONCURRENT_PER_CLIENT": "0",
	}
	maps.Copy(env, extra)
	return config.Load(func(k string) string { return env[k] })
}

func startService(ctx context.Context, dbURL, label string) (*service, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, fmt.Errorf("startService: %w", err)
	}
	cfg, err := inProcessConfig(root, dbURL, nil)
	if err != nil {
		return nil, fmt.Errorf("startService: %w", err)
	}
	// serve loads the tokenizer at start rather than on the first query.
	if err := llm.LoadTokenizer(); err != nil {
		return nil, fmt.Errorf("startService: %w", err)
	}
	db, err := postgres.Open(ctx, cfg.DatabaseURL, cfg.DatabaseMaxConns)
	if err != nil {
		return nil, fmt.Errorf("startService: %w", err)
	}
	if err := db.Ready(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("startService: %w", err)
	}
	// Logging stays on at info, as in production: formatting the request line is part
	// of the cost being measured; only the write goes nowhere.
	logger := slog.New(logs.NewJSON(io.Discard, slog.LevelInfo)) // serve's logger, writing nowhere
	ingest, err := ingestDemo(ctx, cfg, db, logger)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("startService: %w", err)
	}
	svc, err := app.Build(ctx, cfg, app.Options{DB: db, Logger: logger, Register: registerTools})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("startService: %w", err)
	}
	srv, addr, err := serve(svc.HTTP.Handler(), label)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("startService: %w", err)
	}
	return &service{svc: svc, db: db, cfg: cfg, ingest: ingest, srv: srv, addr: addr}, nil
}

func (s *service) close() {
	shutdown(s.srv)
	s.db.Close()
}

// serve serves h on a fresh loopback port with the http.Server settings the service
// uses, so that subject and baseline differ only in their handlers. With a label, the
// goroutine of every connection carries the pprof label side=label once it has read a
// request, so that a CPU profile can be split by side (go tool pprof -tagfocus side=…).
func serve(h http.Handler, label string) (*http.Server, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(slog.DiscardHandler, slog.LevelWarn),
	}
	if label != "" {
		labels := pprof.WithLabels(context.Background(), pprof.Labels("side", label))
		// StateActive is reported on the connection's own goroutine.
		srv.ConnState = func(_ net.Conn, st http.ConnState) {
			if st == http.StateActive {
				pprof.SetGoroutineLabels(labels)
			}
		}
	}
	go func() { _ = srv.Serve(ln) }()
	return srv, ln.Addr().String(), nil
}

func shutdown(srv *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
}
