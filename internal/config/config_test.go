package config_test

import (
	"maps"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/config"
	"github.com/sitetools/sitetools/internal/fetch"
	"github.com/sitetools/sitetools/internal/llm"
)

func TestConfigErrorsNameEveryVariable(t *testing.T) {
	vars := map[string]string{
		"DATABASE_URL":              "mysql://x",
		"RATE_LIMIT_PER_MINUTE":     "lots",
		"TRUSTED_PROXIES":           "10.0.0.0/8, not-an-ip",
		"CORS_ALLOWED_ORIGINS":      "ftp://x",
		"TOOL_TIMEOUT":              "-1s",
		"BODY_LIMIT_BYTES":          "1",
		"LOG_LEVEL":                 "loud",
		"SITE_URL":                  "example.com",
		"WEBMCP_ORIGIN_TRIAL_TOKEN": "not a token\n",
		"FETCH_ALLOW_PRIVATE":       "yes",
	}
	_, err := config.Load(func(k string) string { return vars[k] })
	if err == nil {
		t.Fatal("no error")
	}
	for _, name := range []string{"DATABASE_URL", "RATE_LIMIT_PER_MINUTE", "TRUSTED_PROXIES", "CORS_ALLOWED_ORIGINS", "TOOL_TIMEOUT", "BODY_LIMIT_BYTES", "LOG_LEVEL", "SITE_URL", "ADMIN_TOKEN", "WEBMCP_ORIGIN_TRIAL_TOKEN", "FETCH_ALLOW_PRIVATE"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name %s:\n%v", name, err)
		}
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != 11 {
		t.Errorf("%d lines, want one per problem (11):\n%v", n, err)
	}
}

func TestConfigFetchAllowPrivate(t *testing.T) {
	for value, want := range map[string]fetch.Options{
		"":                      {},
		"false":                 {},
		"TRUE":                  {AllowPrivate: true},
		"10.0.0.0/8, 192.0.2.7": {Allow: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32")}},
	} {
		cfg, err := config.Load(func(k string) string {
			return map[string]string{"DATABASE_URL": "postgres://x", "ADMIN_LISTEN_ADDR": "off", "FETCH_ALLOW_PRIVATE": value}[k]
		})
		if err != nil {
			t.Fatalf("%q: %v", value, err)
		}
		if cfg.Fetch.AllowPrivate != want.AllowPrivate || !slices.Equal(cfg.Fetch.Allow, want.Allow) {
			t.Errorf("FETCH_ALLOW_PRIVATE=%q: %+v; want %+v", value, cfg.Fetch, want)
		}
	}
}

// TestAreas: a command loads only the areas it uses. Without the HTTP area no admin token
// is asked for, and a problem in an area not loaded is not reported.
func TestAreas(t *testing.T) {
	env := map[string]string{"DATABASE_URL": "postgres://x", "LISTEN_ADDR": "", "LLM_TOOL_MODE": "telepathy"}
	getenv := func(k string) string { return env[k] }
	cfg, err := config.Load(getenv, config.AreaDatabase, config.AreaEmbeddings)
	if err != nil {
		t.Fatalf("database and embeddings: %v", err)
	}
	if cfg.DatabaseURL != "postgres://x" || cfg.Embeddings.Dimensions != 384 || cfg.AdminListenAddr != "" {
		t.Errorf("loaded %+v", cfg)
	}
	_, err = config.Load(getenv)
	for _, name := range []string{"ADMIN_TOKEN", "LLM_TOOL_MODE"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("all areas: %v; want a problem naming %s", err, name)
		}
	}
}

// TestEmbeddingPrefixes: the model's preset applies with an OpenAI-compatible provider
// unless a prefix is set; "none" turns one off; a prefix keeps its trailing space and
// reads \n as a line break; the local embedder gets no preset.
func TestEmbeddingPrefixes(t *testing.T) {
	for _, tc := range []struct {
		name string
		vars map[string]string
		want llm.Prefixes
	}{
		{"preset", map[string]string{"EMBEDDINGS_MODEL": "nomic-embed-text"},
			llm.Prefixes{Query: "search_query: ", Document: "search_document: "}},
		{"set", map[string]string{"EMBEDDINGS_MODEL": "nomic-embed-text", "EMBEDDINGS_QUERY_PREFIX": "q: ", "EMBEDDINGS_DOCUMENT_PREFIX": "none"},
			llm.Prefixes{Query: "q: "}},
		{"line break", map[string]string{"EMBEDDINGS_MODEL": "my-model", "EMBEDDINGS_QUERY_PREFIX": `Instruct: find\nQuery:`},
			llm.Prefixes{Query: "Instruct: find\nQuery:"}},
		{"no preset", map[string]string{"EMBEDDINGS_MODEL": "bge-m3"}, llm.Prefixes{}},
		{"local", map[string]string{"EMBEDDINGS_PROVIDER": "local", "EMBEDDINGS_MODEL": "nomic-embed-text"}, llm.Prefixes{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{"EMBEDDINGS_PROVIDER": "openai", "EMBEDDINGS_DIMENSIONS": "768"}
			maps.Copy(vars, tc.vars)
			cfg, err := config.Load(func(k string) string { return vars[k] }, config.AreaEmbeddings)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Embeddings.Prefixes != tc.want {
				t.Errorf("prefixes = %q, want %q", cfg.Embeddings.Prefixes, tc.want)
			}
		})
	}
	vars := map[string]string{"EMBEDDINGS_QUERY_PREFIX": "a\tb", "EMBEDDINGS_DOCUMENT_PREFIX": strings.Repeat("x", 501),
		"EMBEDDINGS_BATCH_SIZE": "0", "EMBEDDINGS_INGEST_TIMEOUT": "soon"}
	_, err := config.Load(func(k string) string { return vars[k] }, config.AreaEmbeddings)
	for _, name := range []string{"EMBEDDINGS_QUERY_PREFIX", "EMBEDDINGS_DOCUMENT_PREFIX", "EMBEDDINGS_BATCH_SIZE", "EMBEDDINGS_INGEST_TIMEOUT"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("error does not name %s: %v", name, err)
		}
	}
}

// TestBreakers: the circuit breakers of both providers default to five failures and a
// 30 s cool-down, 0 failures turns one off, and a negative count or a cool-down under a
// second is refused with a message that names the variable.
func TestBreakers(t *testing.T) {
	load := func(vars map[string]string) (config.Config, error) {
		return config.Load(func(k string) string { return vars[k] }, config.AreaEmbeddings, config.AreaChat)
	}
	cfg, err := load(nil)
	if err != nil {
		t.Fatal(err)
	}
	type breaker struct {
		failures int
		cooldown time.Duration
	}
	got := []breaker{{cfg.Embeddings.BreakerFailures, cfg.Embeddings.BreakerCooldown}, {cfg.Chat.BreakerFailures, cfg.Chat.BreakerCooldown}}
	if want := []breaker{{5, 30 * time.Second}, {5, 30 * time.Second}}; !slices.Equal(got, want) {
		t.Errorf("defaults %+v, want %+v", got, want)
	}

	cfg, err = load(map[string]string{"EMBEDDINGS_BREAKER_FAILURES": "0", "EMBEDDINGS_BREAKER_COOLDOWN": "1s",
		"LLM_BREAKER_FAILURES": "3", "LLM_BREAKER_COOLDOWN": "2m"})
	if err != nil {
		t.Fatal(err)
	}
	got = []breaker{{cfg.Embeddings.BreakerFailures, cfg.Embeddings.BreakerCooldown}, {cfg.Chat.BreakerFailures, cfg.Chat.BreakerCooldown}}
	if want := []breaker{{0, time.Second}, {3, 2 * time.Minute}}; !slices.Equal(got, want) {
		t.Errorf("set %+v, want %+v", got, want)
	}

	_, err = load(map[string]string{"EMBEDDINGS_BREAKER_FAILURES": "-1", "EMBEDDINGS_BREAKER_COOLDOWN": "500ms",
		"LLM_BREAKER_FAILURES": "many", "LLM_BREAKER_COOLDOWN": "-30s"})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		`EMBEDDINGS_BREAKER_FAILURES must be a whole number from 0 to 1000, got "-1"`,
		`EMBEDDINGS_BREAKER_COOLDOWN must be a duration of at least 1s such as 30s, got "500ms"`,
		`LLM_BREAKER_FAILURES must be a whole number from 0 to 1000, got "many"`,
		`LLM_BREAKER_COOLDOWN must be a duration of at least 1s such as 30s, got "-30s"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != 4 {
		t.Errorf("%d lines, want one per problem (4):\n%v", n, err)
	}
}

func TestConfigIngest(t *testing.T) {
	load := func(vars map[string]string) (config.Config, error) {
		base := map[string]string{"DATABASE_URL": "postgres://x", "ADMIN_LISTEN_ADDR": "off"}
		maps.Copy(base, vars)
		return config.Load(func(k string) string { return base[k] })
	}
	cfg, err := load(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Ingest.SitemapURL != "" || cfg.Ingest.Interval != time.Hour || cfg.Ingest.Origin() != "" ||
		cfg.Ingest.MaxPages != 100_000 || cfg.Ingest.MaxAge != 7*24*time.Hour {
		t.Errorf("defaults: %+v, origin %q; want no sitemap, 1h, 100 000 pages, 7 days", cfg.Ingest, cfg.Ingest.Origin())
	}
	for _, tc := range []struct {
		pages, age string
		want       config.Ingest
	}{
		{"50", "30d", config.Ingest{Interval: time.Hour, MaxPages: 50, MaxAge: 30 * 24 * time.Hour}},
		{"1000000", "36h", config.Ingest{Interval: time.Hour, MaxPages: 1_000_000, MaxAge: 36 * time.Hour}},
		{"1", "0", config.Ingest{Interval: time.Hour, MaxPages: 1}},
	} {
		cfg, err := load(map[string]string{"INGEST_MAX_PAGES": tc.pages, "INGEST_MAX_AGE": tc.age})
		if err != nil || cfg.Ingest != tc.want {
			t.Errorf("INGEST_MAX_PAGES=%s INGEST_MAX_AGE=%s: %+v, %v; want %+v", tc.pages, tc.age, cfg.Ingest, err, tc.want)
		}
	}
	cfg, err = load(map[string]string{"INGEST_SITEMAP_URL": "HTTPS://Site.Example:8443/sitemap.xml?k=v", "INGEST_INTERVAL": "0"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Ingest.Interval != 0 || cfg.Ingest.Origin() != "https://site.example:8443" {
		t.Errorf("interval 0: %+v, origin %q; want 0 and https://site.example:8443", cfg.Ingest, cfg.Ingest.Origin())
	}
	for _, bad := range []map[string]string{
		{"INGEST_SITEMAP_URL": "site.example/sitemap.xml?token=secret"},
		{"INGEST_INTERVAL": "500ms"},
		{"INGEST_INTERVAL": "-1h"},
		{"INGEST_INTERVAL": "hourly"},
		{"INGEST_MAX_PAGES": "0"},
		{"INGEST_MAX_PAGES": "2000000"},
		{"INGEST_MAX_PAGES": "lots"},
		{"INGEST_MAX_AGE": "30m"},
		{"INGEST_MAX_AGE": "-1d"},
		{"INGEST_MAX_AGE": "1.5d"},
		{"INGEST_MAX_AGE": "weekly"},
	} {
		_, err := load(bad)
		for name, v := range bad {
			if err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%s=%q: %v; want an error naming it", name, v, err)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("%s: the error repeats the URL: %v", name, err)
			}
		}
	}
}

// TestVectorSearch: SEARCH_EF_SEARCH and SEARCH_ITERATIVE_SCAN have defaults, take the
// values pgvector accepts, and name themselves when they are wrong.
func TestVectorSearch(t *testing.T) {
	load := func(env map[string]string) (config.Search, error) {
		cfg, err := config.Load(func(k string) string { return env[k] }, config.AreaSearch)
		return cfg.Search, err
	}
	s, err := load(nil)
	if err != nil || s.EFSearch != config.DefaultEFSearch || s.IterativeScan != config.DefaultIterativeScan {
		t.Errorf("defaults: %+v, %v", s, err)
	}
	s, err = load(map[string]string{"SEARCH_EF_SEARCH": "400", "SEARCH_ITERATIVE_SCAN": "off"})
	if err != nil || s.EFSearch != 400 || s.IterativeScan != "off" {
		t.Errorf("set: %+v, %v", s, err)
	}
	for name, value := range map[string]string{"SEARCH_EF_SEARCH": "1001", "SEARCH_ITERATIVE_SCAN": "relaxed"} {
		_, err := load(map[string]string{name: value})
		if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), value) {
			t.Errorf("%s=%s: %v; want an error naming the variable and the value", name, value, err)
		}
	}
}
