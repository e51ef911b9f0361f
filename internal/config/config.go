// Package config is sitetools' configuration, read from the environment once at
// start-up, in areas: each has its defaults and its checks, and each command loads only
// the areas it uses. Every variable is documented in the README.
package config

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"time"

	"github.com/sitetools/sitetools/internal/fetch"
	"github.com/sitetools/sitetools/internal/llm"
)

// Config is the service's configuration, loaded from the environment once at start-up.
// Every variable is documented in the README.
type Config struct {
	DatabaseURL      string
	DatabaseMaxConns int32

	ListenAddr      string // host:port, or unix:/path for a 0600 Unix socket
	AdminListenAddr string // loopback by default; "off" (stored as "") disables the admin listener
	AdminToken      string // every admin scope
	// AdminScopeTokens are tokens of one admin scope each (ADMIN_HOOK_TOKEN: the publish
	// hook; ADMIN_REPORT_TOKEN: usage, report and metrics, read-only;
	// ADMIN_BOOKINGS_TOKEN: bookings); empty ones are not set.
	AdminHookToken, AdminReportToken, AdminBookingsToken string

	SiteURL            string   // the site's own origin, always allowed
	CORSAllowedOrigins []string // further origins allowed to call the API from a browser
	TrustedProxies     []netip.Prefix

	Embeddings Embeddings
	Search     Search
	Chat       Chat
	// FairUse is the per-client shares of the paid budgets, their pacing over the day
	// and the chat's optional proof of work.
	FairUse FairUse

	AvailabilityConfig  string   // path of the schedule YAML; empty: no get_free_slots
	AvailabilityICSURLs []string // busy-time calendar feeds

	// Retention says how long the ledger, the embedding cache and idempotency keys are
	// kept; serve prunes on one replica at a time (see postgres.DB.Prune).
	Retention Retention

	// Ingest is the site sync serve runs and the limits of every sitemap ingest (INGEST_*).
	Ingest Ingest

	// Fetch configures the client of the crawler and the calendar feeds (FETCH_ALLOW_PRIVATE:
	// true, or the non-public ranges allowed).
	Fetch fetch.Options

	// AllowedHosts are the Host headers the public routes accept on a loopback address
	// beside localhost, loopback IPs and SITE_URL's host (ALLOWED_HOSTS, and its former
	// name MCP_ALLOWED_HOSTS).
	AllowedHosts []string

	SitePagesDir     string // Markdown pages served as the site; empty: no pages
	WebMCPWidgetPath string // the relay's widget script from npm; empty: looked for where it is usually installed
	WebMCPRelayPort  int    // the visitor's relay port the pages' CSP lets the bridge reach
	// WebMCPOriginTrialToken, when set, is sent with every page as an Origin-Trial
	// header: Chrome then offers document.modelContext to visitors without the flag.
	WebMCPOriginTrialToken string

	// Version is the build's version, set by the command, not the environment.
	Version string

	RateLimitPerMinute  int // tool calls per client per minute; 0 disables
	RateLimitIPv6Prefix int // IPv6 clients share a bucket per network of this many bits
	ToolMaxConcurrent   int // tool calls at once on one replica, all channels
	// ToolMaxConcurrentPerClient is how many of them one client may hold; 0: no share.
	ToolMaxConcurrentPerClient int
	BodyLimitBytes             int64 // request body limit of the public API
	ToolTimeout                time.Duration
	ShutdownTimeout            time.Duration
	LogLevel                   string
}

// Embeddings configures the embedding provider and its cost guard.
type Embeddings struct {
	Provider         string // "local" | "openai"
	BaseURL          string
	APIKey           string
	Model            string
	Dimensions       int
	DailyTokenBudget int64 // 0: unlimited
	PricePerMTok     float64
	Timeout          time.Duration // one query embedding, retries included
	// Prefixes go before every query and every document chunk sent to the model: the
	// model's preset (llm.PresetPrefixes) unless EMBEDDINGS_QUERY_PREFIX or
	// EMBEDDINGS_DOCUMENT_PREFIX say otherwise ("none": no prefix).
	Prefixes llm.Prefixes
	// BatchSize is the most chunks one ingest request carries; IngestTimeout bounds one
	// such request (a batch that runs out of it is split, not sent again whole).
	BatchSize     int
	IngestTimeout time.Duration
	// BreakerFailures is how many provider failures in a row open the provider's
	// circuit (0: no circuit breaker); BreakerCooldown is how long it then stays open
	// before one probe call decides (see internal/breaker).
	BreakerFailures int
	BreakerCooldown time.Duration
}

// The circuit breakers' defaults and bounds: five failures in a row and 30 s suit a
// hosted API and a model server on a CPU alike, whose model takes 10–20 s to load.
const (
	defaultBreakerFailures = 5
	maxBreakerFailures     = 1000
	defaultBreakerCooldown = 30 * time.Second
)

// Chat configures the site chat (POST /api/chat) and its model.
type Chat struct {
	LLMBaseURL       string // empty: no model, retrieval-only answers
	LLMAPIKey        string
	LLMModel         string
	ToolMode         string // "native" | "json"
	DailyTokenBudget int64  // 0: unlimited
	PricePerMTok     float64
	Timeout          time.Duration // one provider call
	PersonaFile      string
	MaxToolRounds    int
	MaxConcurrent    int // chat turns at once on one replica
	// MaxConcurrentPerClient is how many of them one client may hold; 0: no share.
	MaxConcurrentPerClient int
	MaxMessages            int
	MaxChars               int // the whole transcript; one message gets at most MaxMessageChars of it
	// BreakerFailures is how many model failures in a row open the model's circuit
	// (0: no circuit breaker); BreakerCooldown is how long it then stays open before
	// one probe call decides (see internal/breaker).
	BreakerFailures int
	BreakerCooldown time.Duration
}

// MaxMessageChars is the most characters of one message of a chat transcript.
func (c Chat) MaxMessageChars() int { return min(c.MaxChars, 8000) }

// Search configures search_site.
type Search struct {
	MaxQueryChars  int
	MaxQueryTokens int
	SynonymsFile   string // SEARCH_SYNONYMS_FILE; "" none
	// RelevantDistance is the semantic side of the relevance floor the owner's report
	// counts searches that found nothing by (SEARCH_RELEVANT_DISTANCE, a cosine distance
	// from 0 to 2; 0: words and synonyms alone).
	RelevantDistance float64
	// EFSearch and IterativeScan are how search walks the HNSW index, set on every
	// database connection: hnsw.ef_search (SEARCH_EF_SEARCH, 1 to 1000) and
	// hnsw.iterative_scan (SEARCH_ITERATIVE_SCAN: off, relaxed_order, strict_order).
	EFSearch      int
	IterativeScan string
}

// The vector search's defaults, postgres.DefaultEFSearch and postgres.DefaultIterativeScan
// (the configuration does not import what it configures; a test keeps them equal).
const (
	DefaultEFSearch      = 100
	DefaultIterativeScan = "relaxed_order"
)

// Retention says how long the rows that grow with use are kept; a zero field keeps them.
// See postgres.Retention, which it converts to.
type Retention struct {
	LedgerDays            int // LEDGER_RETENTION_DAYS
	EmbeddingCacheDays    int // EMBEDDING_CACHE_TTL_DAYS
	EmbeddingCacheMaxRows int // EMBEDDING_CACHE_MAX_ROWS
}

// An Area is one part of the configuration, loaded and checked on its own, so that a
// command reads only the variables it uses (ingest needs no admin token).
type Area int

// The areas.
const (
	AreaDatabase     Area = iota // DATABASE_URL, DATABASE_MAX_CONNS
	AreaHTTP                     // listeners, admin token, origins, proxies, limits, timeouts
	AreaEmbeddings               // EMBEDDINGS_*
	AreaSearch                   // SEARCH_*
	AreaChat                     // LLM_*, CHAT_*
	AreaAvailability             // AVAILABILITY_*
	AreaSite                     // SITE_PAGES_DIR, WEBMCP_*, ALLOWED_HOSTS
	AreaRetention                // LEDGER_RETENTION_DAYS, EMBEDDING_CACHE_*
	AreaFetch                    // FETCH_ALLOW_PRIVATE
	AreaIngest                   // INGEST_*
	AreaLog                      // LOG_LEVEL
	AreaFairUse                  // *_CLIENT_DAILY_SHARE, BUDGET_PACING*, CLIENT_KEY_SECRET, CHAT_PROOF_OF_WORK*
)

// All is every area: what serve loads.
var All = []Area{AreaDatabase, AreaHTTP, AreaEmbeddings, AreaSearch, AreaChat, AreaAvailability, AreaSite, AreaRetention, AreaFetch, AreaIngest, AreaLog, AreaFairUse}

// Load reads the given areas (none: All) through getenv (os.Getenv in production) and
// reports every problem at once, one line each. Areas not asked for stay at their zero
// value.
func Load(getenv func(string) string, areas ...Area) (Config, error) {
	if len(areas) == 0 {
		areas = All
	}
	l := &loader{getenv: getenv}
	var c Config
	for _, a := range areas {
		switch a {
		case AreaDatabase:
			c.loadDatabase(l)
		case AreaHTTP:
			c.loadHTTP(l)
		case AreaEmbeddings:
			c.Embeddings.load(l)
		case AreaSearch:
			c.Search = Search{
				MaxQueryChars:  l.integer("SEARCH_MAX_QUERY_CHARS", 300, 10, 10000),
				MaxQueryTokens: l.integer("SEARCH_MAX_QUERY_TOKENS", 96, 4, 8192),
				SynonymsFile:   l.str("SEARCH_SYNONYMS_FILE", ""),
			}
			if c.Search.RelevantDistance = l.float("SEARCH_RELEVANT_DISTANCE", 0); c.Search.RelevantDistance > 2 {
				l.fail("SEARCH_RELEVANT_DISTANCE", "must be a cosine distance from 0 to 2")
			}
			c.Search.EFSearch = l.integer("SEARCH_EF_SEARCH", DefaultEFSearch, 1, 1000)
			switch c.Search.IterativeScan = l.str("SEARCH_ITERATIVE_SCAN", DefaultIterativeScan); c.Search.IterativeScan {
			case "off", "relaxed_order", "strict_order":
			default:
				l.fail("SEARCH_ITERATIVE_SCAN", fmt.Sprintf("must be off, relaxed_order or strict_order, got %q", c.Search.IterativeScan))
				c.Search.IterativeScan = DefaultIterativeScan
			}
		case AreaChat:
			c.Chat.load(l)
		case AreaAvailability:
			c.AvailabilityConfig = l.str("AVAILABILITY_CONFIG", "")
			c.AvailabilityICSURLs = l.urls("AVAILABILITY_ICS_URLS")
		case AreaSite:
			c.loadSite(l)
		case AreaRetention:
			c.Retention = Retention{
				LedgerDays:            l.integer("LEDGER_RETENTION_DAYS", 400, 0, 100_000),
				EmbeddingCacheDays:    l.integer("EMBEDDING_CACHE_TTL_DAYS", 30, 0, 100_000),
				EmbeddingCacheMaxRows: l.integer("EMBEDDING_CACHE_MAX_ROWS", 100_000, 0, 1<<31-1),
			}
		case AreaFetch:
			c.Fetch = l.fetchOptions("FETCH_ALLOW_PRIVATE")
		case AreaIngest:
			c.Ingest.load(l)
		case AreaFairUse:
			c.FairUse.load(l)
		case AreaLog:
			c.LogLevel = l.str("LOG_LEVEL", "info")
			switch c.LogLevel {
			case "debug", "info", "warn", "error":
			default:
				l.fail("LOG_LEVEL", "must be one of debug, info, warn, error")
			}
		}
	}
	return c, errors.Join(l.errs...)
}

func (c *Config) loadDatabase(l *loader) {
	c.DatabaseURL = l.str("DATABASE_URL", "")
	c.DatabaseMaxConns = int32(l.integer("DATABASE_MAX_CONNS", 20, 1, 1000))
	if c.DatabaseURL == "" {
		l.fail("DATABASE_URL", "is required (e.g. postgres://user:pass@host:5432/sitetools)")
	} else if u, err := url.Parse(c.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		// The URL holds a password: never repeat it.
		l.fail("DATABASE_URL", "must be a postgres:// URL")
	}
}

func (c *Config) loadHTTP(l *loader) {
	c.ListenAddr = l.str("LISTEN_ADDR", ":8080")
	c.AdminListenAddr = l.str("ADMIN_LISTEN_ADDR", "127.0.0.1:9090")
	c.AdminToken = l.str("ADMIN_TOKEN", "")
	c.SiteURL = l.str("SITE_URL", "")
	c.CORSAllowedOrigins = l.origins("CORS_ALLOWED_ORIGINS")
	c.TrustedProxies = l.prefixes("TRUSTED_PROXIES")
	c.RateLimitPerMinute = l.integer("RATE_LIMIT_PER_MINUTE", 60, 0, 1_000_000)
	c.RateLimitIPv6Prefix = l.integer("RATE_LIMIT_IPV6_PREFIX", 64, 1, 128)
	c.ToolMaxConcurrent = l.integer("TOOL_MAX_CONCURRENT", 128, 1, 100_000)
	c.ToolMaxConcurrentPerClient = l.integer("TOOL_MAX_CONCURRENT_PER_CLIENT", 16, 0, 100_000)
	c.BodyLimitBytes = int64(l.integer("BODY_LIMIT_BYTES", 64<<10, 1024, 16<<20))
	c.ToolTimeout = l.duration("TOOL_TIMEOUT", 10*time.Second)
	c.ShutdownTimeout = l.duration("SHUTDOWN_TIMEOUT", 20*time.Second)
	if c.SiteURL != "" {
		o, err := origin(c.SiteURL)
		if err != nil {
			l.fail("SITE_URL", err.Error())
		}
		c.SiteURL = o
	}
	if c.ListenAddr == "" {
		l.fail("LISTEN_ADDR", "must not be empty")
	}
	if c.AdminListenAddr == "off" {
		c.AdminListenAddr = ""
	}
	c.AdminHookToken = l.str("ADMIN_HOOK_TOKEN", "")
	c.AdminReportToken = l.str("ADMIN_REPORT_TOKEN", "")
	c.AdminBookingsToken = l.str("ADMIN_BOOKINGS_TOKEN", "")
	anyToken := false
	for _, t := range []struct{ name, v string }{
		{"ADMIN_TOKEN", c.AdminToken}, {"ADMIN_HOOK_TOKEN", c.AdminHookToken},
		{"ADMIN_REPORT_TOKEN", c.AdminReportToken}, {"ADMIN_BOOKINGS_TOKEN", c.AdminBookingsToken},
	} {
		if t.v == "" {
			continue
		}
		anyToken = true
		if len(t.v) < 16 {
			l.fail(t.name, "must be at least 16 characters")
		}
	}
	if c.AdminListenAddr != "" && !anyToken {
		l.fail("ADMIN_TOKEN", "is required while the admin listener is on, or one of ADMIN_HOOK_TOKEN, ADMIN_REPORT_TOKEN, ADMIN_BOOKINGS_TOKEN (set ADMIN_LISTEN_ADDR=off to turn it off)")
	}
}

func (e *Embeddings) load(l *loader) {
	*e = Embeddings{
		Provider:         l.str("EMBEDDINGS_PROVIDER", "local"),
		BaseURL:          l.str("EMBEDDINGS_BASE_URL", ""),
		APIKey:           l.str("EMBEDDINGS_API_KEY", ""),
		Model:            l.str("EMBEDDINGS_MODEL", ""),
		Dimensions:       l.integer("EMBEDDINGS_DIMENSIONS", 0, 1, 16000),
		DailyTokenBudget: int64(l.integer("EMBEDDINGS_DAILY_TOKEN_BUDGET", 0, 0, 1<<40)),
		PricePerMTok:     l.float("EMBEDDINGS_PRICE_PER_MTOK", 0),
		Timeout:          l.duration("EMBEDDINGS_TIMEOUT", 5*time.Second),
		BatchSize:        l.integer("EMBEDDINGS_BATCH_SIZE", 32, 1, 2048),
		IngestTimeout:    l.duration("EMBEDDINGS_INGEST_TIMEOUT", 60*time.Second),
		BreakerFailures:  l.integer("EMBEDDINGS_BREAKER_FAILURES", defaultBreakerFailures, 0, maxBreakerFailures),
		BreakerCooldown:  l.cooldown("EMBEDDINGS_BREAKER_COOLDOWN", defaultBreakerCooldown),
	}
	var preset llm.Prefixes
	if e.Provider == "openai" {
		preset = llm.PresetPrefixes(e.Model)
	}
	e.Prefixes = llm.Prefixes{
		Query:    l.prefix("EMBEDDINGS_QUERY_PREFIX", preset.Query),
		Document: l.prefix("EMBEDDINGS_DOCUMENT_PREFIX", preset.Document),
	}
	switch e.Provider {
	case "local":
		if e.Dimensions == 0 {
			e.Dimensions = 384
		}
	case "openai":
		if e.Model == "" {
			l.fail("EMBEDDINGS_MODEL", "is required with EMBEDDINGS_PROVIDER=openai (e.g. text-embedding-3-small, nomic-embed-text)")
		}
		if e.Dimensions == 0 {
			l.fail("EMBEDDINGS_DIMENSIONS", "is required with EMBEDDINGS_PROVIDER=openai: the length of the model's vectors (e.g. 768 for nomic-embed-text)")
		}
		if e.BaseURL != "" {
			if u, err := url.Parse(e.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				l.fail("EMBEDDINGS_BASE_URL", "must be an http(s) URL such as http://localhost:11434/v1")
			}
		}
	default:
		l.fail("EMBEDDINGS_PROVIDER", "must be local or openai")
	}
}

func (ch *Chat) load(l *loader) {
	*ch = Chat{
		LLMBaseURL:             l.str("LLM_BASE_URL", ""),
		LLMAPIKey:              l.str("LLM_API_KEY", ""),
		LLMModel:               l.str("LLM_MODEL", ""),
		ToolMode:               l.str("LLM_TOOL_MODE", "native"),
		DailyTokenBudget:       int64(l.integer("LLM_DAILY_TOKEN_BUDGET", 0, 0, 1<<40)),
		PricePerMTok:           l.float("LLM_PRICE_PER_MTOK", 0),
		Timeout:                l.duration("LLM_TIMEOUT", 60*time.Second),
		PersonaFile:            l.str("CHAT_PERSONA_FILE", ""),
		MaxToolRounds:          l.integer("CHAT_MAX_TOOL_ROUNDS", 4, 1, 16),
		MaxConcurrent:          l.integer("CHAT_MAX_CONCURRENT", 32, 1, 100_000),
		MaxConcurrentPerClient: l.integer("CHAT_MAX_CONCURRENT_PER_CLIENT", 4, 0, 100_000),
		MaxMessages:            l.integer("CHAT_MAX_MESSAGES", 40, 1, 500),
		MaxChars:               l.integer("CHAT_MAX_CHARS", 20000, 100, 1_000_000),
		BreakerFailures:        l.integer("LLM_BREAKER_FAILURES", defaultBreakerFailures, 0, maxBreakerFailures),
		BreakerCooldown:        l.cooldown("LLM_BREAKER_COOLDOWN", defaultBreakerCooldown),
	}
	if ch.LLMBaseURL != "" {
		if u, err := url.Parse(ch.LLMBaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			l.fail("LLM_BASE_URL", "must be an http(s) URL such as https://api.openai.com/v1 or http://localhost:11434/v1")
		}
		if ch.LLMModel == "" {
			l.fail("LLM_MODEL", "is required with LLM_BASE_URL (e.g. gpt-4o-mini, llama3.1)")
		}
	}
	switch ch.ToolMode {
	case "native", "json":
	default:
		l.fail("LLM_TOOL_MODE", "must be native or json")
	}
}

func (c *Config) loadSite(l *loader) {
	c.AllowedHosts = append(l.hosts("ALLOWED_HOSTS"), l.hosts("MCP_ALLOWED_HOSTS")...)
	c.SitePagesDir = l.str("SITE_PAGES_DIR", "")
	c.WebMCPWidgetPath = l.str("WEBMCP_WIDGET_PATH", "")
	c.WebMCPRelayPort = l.integer("WEBMCP_RELAY_PORT", 4797, 1, 65535)
	c.WebMCPOriginTrialToken = l.str("WEBMCP_ORIGIN_TRIAL_TOKEN", "")
	if t := c.WebMCPOriginTrialToken; t != "" && !originTrialToken.MatchString(t) {
		l.fail("WEBMCP_ORIGIN_TRIAL_TOKEN", "must be the token Chrome's origin-trial console gives (base64, one line, no spaces)")
	}
}

// originTrialToken is the shape of an origin-trial token: base64 of a signed payload.
var originTrialToken = regexp.MustCompile(`^[A-Za-z0-9+/]{40,1000}={0,2}$`)

// AllowedOrigins returns every origin allowed to call the public API from a browser.
func (c Config) AllowedOrigins() []string {
	out := append([]string(nil), c.CORSAllowedOrigins...)
	if c.SiteURL != "" {
		out = append(out, c.SiteURL)
	}
	return out
}
