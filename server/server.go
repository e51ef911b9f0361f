// Package server is the HTTP edge of sitetools: routes, middleware, the
// error table, and the channels that serve the tool registry.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sitetools/sitetools/internal/config"
	"github.com/sitetools/sitetools/server/web"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitetools/sitetools/internal/assistant"
	"github.com/sitetools/sitetools/internal/clientkey"
	"github.com/sitetools/sitetools/internal/insights"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/tools"
	"github.com/sitetools/sitetools/tools/appointments"
)

// App is the service: the public API, the admin API, and what they share.
type App struct {
	cfg      config.Config
	db       *postgres.DB
	logger   *slog.Logger
	registry *tools.Registry
	edge     *Edge
	metrics  *metrics
	limiter  *RateLimiter
	chatCap  *Cap // chat turns at once
	usage    func(ctx context.Context, days int) (any, error)
	bookings appointments.BookingStore
	reindex  Reindexer
	chat     *assistant.Assistant
	// insights counts ratings, searches, answers and hand-overs; answerIDs names answers
	// for the ratings.
	insights  *insights.Recorder
	answerIDs *insights.AnswerIDs
	pressure  func() bool // the paced LLM budget runs short; never nil
	pow       *proofOfWork
	// clientKeys name a visitor in counted_handovers; never nil.
	clientKeys *clientkey.Hasher

	mcp    *mcpChannel
	pages  indexPages // the index's pages, for llms.txt and their Markdown renderings
	llms   *llmsFiles
	site   *web.Site
	public *echo.Echo
	admin  *echo.Echo
}

// Edge is what the HTTP edge adds to every call: metrics, the per-client rate limit and
// the caps on calls and chat turns at once. The registry runs its interceptors (see
// Interceptors); the routes use the rest.
type Edge struct {
	metrics *metrics
	limiter *RateLimiter
	toolCap *Cap // tool calls at once
	chatCap *Cap // chat turns at once
	bucket  func(client string) string
	// nameClient returns ctx naming the client a call's paid work is charged to (the
	// budgets' WithClient, set by NameClients); nil: none.
	nameClient func(ctx context.Context, client string) context.Context
}

// NameClients makes every tool call and chat turn name its client to f (the budgets'
// WithClient), by the rate limit's key: an address, or an IPv6 /64. Call it before any
// request.
func (e *Edge) NameClients(f func(ctx context.Context, client string) context.Context) {
	e.nameClient = f
}

// withClient is ctx naming client (by its bucket) for the budgets' daily shares.
func (e *Edge) withClient(ctx context.Context, client string) context.Context {
	if e.nameClient == nil || client == "" {
		return ctx
	}
	return e.nameClient(ctx, e.bucket(client))
}

// NewEdge returns the edge for cfg, registering its metrics with reg (nil: a registry of
// its own).
func NewEdge(cfg config.Config, reg *prometheus.Registry) *Edge {
	return &Edge{
		metrics: newMetrics(reg),
		limiter: newClientLimiter(cfg),
		toolCap: NewCap(cfg.ToolMaxConcurrent, cfg.ToolMaxConcurrentPerClient, "tool calls", clientBucket(cfg)),
		chatCap: NewCap(cfg.Chat.MaxConcurrent, cfg.Chat.MaxConcurrentPerClient, "chat conversations", clientBucket(cfg)),
		bucket:  clientBucket(cfg),
	}
}

// Interceptors are the edge's interceptors of every call, outermost first: metrics see
// every outcome, and the rate limit and the cap apply before any work.
func (e *Edge) Interceptors() []tools.Interceptor {
	return []tools.Interceptor{e.metrics.intercept, e.limiter.Intercept, e.toolCap.Intercept, e.fairUse}
}

// fairUse names the call's client to the budgets by the rate limit's key, so that the
// paid calls it makes are charged to that client's daily share.
func (e *Edge) fairUse(ctx context.Context, call *tools.Call, next tools.Invoker) (*tools.Result, error) {
	return next(e.withClient(ctx, call.Request.Client), call)
}

// Metrics is the registry the edge's metrics are in.
func (e *Edge) Metrics() *prometheus.Registry { return e.metrics.reg }

// Options are what New is given beside the configuration: it attaches routes to them.
type Options struct {
	DB     *postgres.DB
	Logger *slog.Logger // nil discards
	// Edge is the edge whose interceptors Registry runs.
	Edge *Edge
	// Registry holds the tools every channel serves.
	Registry *tools.Registry
	// Chat answers POST /api/chat.
	Chat *assistant.Assistant
	// Usage reports paid usage on the admin API (nil: no report).
	Usage func(ctx context.Context, days int) (any, error)
	// Bookings are managed on the admin API (nil: no appointments).
	Bookings appointments.BookingStore
	// Reindex is the publish hook's queue on the admin API (nil: POST /admin/reindex
	// answers not_found).
	Reindex Reindexer
	// Insights counts what the owner's report shows (nil: a recorder on DB of its own;
	// give the one the registry's interceptor counts searches with).
	Insights *insights.Recorder
	// Pressure says the paced LLM budget is running short (CHAT_PROOF_OF_WORK=pressure
	// asks for a proof of work then); nil: never.
	Pressure func() bool
	// ClientKeys name a visitor in the database, by the rate limit's key, under a secret
	// every replica shares (the one the budgets' shares use); nil: a secret of this
	// process, and a hand-over without an answer id then counts once per visitor and day
	// on each replica.
	ClientKeys *clientkey.Hasher
}

// New attaches the routes of the public and admin APIs to what it is given. It does not
// listen; see Run, or Handler for tests. internal/app builds what it is given.
func New(cfg config.Config, opts Options) (*App, error) {
	if opts.DB == nil || opts.Edge == nil || opts.Registry == nil || opts.Chat == nil {
		return nil, errors.New("server.New: a database, an edge, a registry and a chat are required")
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	a := &App{
		cfg:      cfg,
		db:       opts.DB,
		logger:   logger,
		registry: opts.Registry,
		edge:     opts.Edge,
		metrics:  opts.Edge.metrics,
		limiter:  opts.Edge.limiter,
		chatCap:  opts.Edge.chatCap,
		usage:    opts.Usage,
		bookings: opts.Bookings,
		reindex:  opts.Reindex,
		chat:     opts.Chat,
		insights: opts.Insights,
		pressure: opts.Pressure,
	}
	if a.clientKeys = opts.ClientKeys; a.clientKeys == nil {
		a.clientKeys = clientkey.New(nil)
	}
	if a.pressure == nil {
		a.pressure = func() bool { return false }
	}
	if a.insights == nil {
		a.insights = insights.New(opts.DB.Pool, insights.Options{Logger: logger})
	}
	a.answerIDs = insights.NewAnswerIDs(opts.DB.Pool, nil)
	a.pow = newProofOfWork(opts.DB)
	a.mcp = &mcpChannel{a: a}
	a.pages = postgres.NewSitePages(opts.DB)
	a.llms = &llmsFiles{pages: a.pages, recheck: llmsRecheck}
	site, err := web.New(web.Options{PagesDir: cfg.SitePagesDir, WidgetPath: cfg.WebMCPWidgetPath,
		RelayPort: cfg.WebMCPRelayPort, OriginTrialToken: cfg.WebMCPOriginTrialToken,
		Catalog: opts.Registry.Catalog().JSON, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("server.New: %w", err)
	}
	a.site = site
	a.public = a.publicRoutes()
	a.admin = a.adminRoutes()
	return a, nil
}

// Registry is the tool registry every channel serves.
func (a *App) Registry() *tools.Registry { return a.registry }

// Handler is the public API.
func (a *App) Handler() http.Handler { return a.public }

// AdminHandler is the admin API.
func (a *App) AdminHandler() http.Handler { return a.admin }

// Run listens on LISTEN_ADDR (and ADMIN_LISTEN_ADDR unless off) and serves until ctx
// is done; see Serve.
func (a *App) Run(ctx context.Context) error {
	pub, err := listen(a.cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("server.Run: LISTEN_ADDR: %w", err)
	}
	var adm net.Listener
	if a.cfg.AdminListenAddr != "" {
		if adm, err = listen(a.cfg.AdminListenAddr); err != nil {
			pub.Close()
			return fmt.Errorf("server.Run: ADMIN_LISTEN_ADDR: %w", err)
		}
	}
	return a.Serve(ctx, pub, adm)
}

// Serve serves the public API on pub and, when adm is not nil, the admin API on adm,
// until ctx is done. Then it shuts down gracefully: the listeners close, requests in
// flight finish (within SHUTDOWN_TIMEOUT), and Serve returns.
func (a *App) Serve(ctx context.Context, pub, adm net.Listener) error {
	type server struct {
		name string
		srv  *http.Server
		ln   net.Listener
	}
	servers := []server{{"public", a.httpServer(a.public), pub}}
	if adm != nil {
		servers = append(servers, server{"admin", a.httpServer(a.admin), adm})
	}
	errc := make(chan error, len(servers))
	for _, s := range servers {
		a.logger.Info("listening", "listener", s.name, "addr", s.ln.Addr().String())
		go func() {
			if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("%s listener: %w", s.name, err)
			}
		}()
	}

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	a.logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownTimeout)
	defer cancel()
	// Both listeners stop accepting at once and drain side by side, each with the whole
	// shutdown timeout.
	errs := make([]error, len(servers)+1)
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.srv.Shutdown(shutdownCtx); err != nil {
				errs[i] = fmt.Errorf("%s shutdown: %w", s.name, err)
			}
		}()
	}
	wg.Wait()
	// What the requests counted reaches the database before the process ends.
	flushCtx, cancelFlush := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelFlush()
	if err := a.insights.Flush(flushCtx); err != nil {
		a.logger.Warn("could not write the last insight counts", "err", err.Error())
	}
	errs[len(servers)] = serveErr
	return errors.Join(errs...)
}

func (a *App) httpServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(a.logger.Handler(), slog.LevelWarn),
	}
}

// listen opens host:port, or a Unix socket for "unix:/path" with mode 0600, removing a
// stale socket left by a previous run.
func listen(addr string) (net.Listener, error) {
	path, ok := strings.CutPrefix(addr, "unix:")
	if !ok {
		return net.Listen("tcp", addr)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s is in use by another process", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	// Create the socket with no permissions for group and others from the start.
	old := umask(0o177)
	ln, err := net.Listen("unix", path)
	umask(old)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// PrometheusRegistry is where the service's metrics are registered.
func (a *App) PrometheusRegistry() *prometheus.Registry { return a.metrics.reg }

// newClientLimiter is the per-client rate limit of cfg.
// clientBucket is how the caps' shares key a client: as the rate limit does.
func clientBucket(cfg config.Config) func(string) string {
	return func(client string) string { return clientKey(client, cfg.RateLimitIPv6Prefix) }
}

func newClientLimiter(cfg config.Config) *RateLimiter {
	l := NewRateLimiter(cfg.RateLimitPerMinute, nil)
	l.IPv6Prefix = cfg.RateLimitIPv6Prefix
	return l
}
