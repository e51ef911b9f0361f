package cli_test

import (
	"bytes"
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/cli"
	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := cli.Run(context.Background(), args, &out, &errOut)
	return out.String() + errOut.String(), err
}

func TestUsageMistakes(t *testing.T) {
	for _, args := range [][]string{{}, {"frobnicate"}, {"ingest"}, {"ingest", "--dir", "x"}, {"ingest", "--dir", "x", "--sitemap", "y"}, {"appointments"}, {"appointments", "cancel"}, {"migrate", "extra"}} {
		_, err := run(t, args...)
		if err == nil || cli.ExitCode(err) != 2 {
			t.Errorf("%v: err %v, exit %d; want a usage error (exit 2)", args, err, cli.ExitCode(err))
		}
	}
	if out, err := run(t, "version"); err != nil || !strings.HasPrefix(out, "sitetools ") {
		t.Fatalf("version: %q %v", out, err)
	}
}

func TestServeRefusesBadConfiguration(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("ADMIN_TOKEN", "short")
	t.Setenv("EMBEDDINGS_PROVIDER", "magic")
	_, err := run(t, "serve")
	if err == nil || cli.ExitCode(err) != 1 {
		t.Fatalf("serve: %v", err)
	}
	for _, name := range []string{"DATABASE_URL", "ADMIN_TOKEN", "EMBEDDINGS_PROVIDER"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("the error does not name %s: %v", name, err)
		}
	}
}

func TestIngestAppointmentsAndUsage(t *testing.T) {
	t.Setenv("DATABASE_URL", pgtest.NewURL(t))
	out, err := run(t, "migrate")
	if err != nil || !strings.Contains(out, "database schema at version") {
		t.Fatalf("migrate: %q %v", out, err)
	}

	ingest := []string{"ingest", "--dir", "../../deploy/demo/site", "--base-url", "https://northwind.example"}
	out, err = run(t, ingest...)
	if err != nil || !regexp.MustCompile(`31 pages: 31 added`).MatchString(out) {
		t.Fatalf("first ingest: %q %v", out, err)
	}
	// The pages share embedding requests of EMBEDDINGS_BATCH_SIZE (32) chunks: only the
	// last one is not full.
	m := regexp.MustCompile(`(\d+) chunks embedded in (\d+) calls`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("first ingest: no embedding count in %q", out)
	}
	chunks, _ := strconv.Atoi(m[1])
	calls, _ := strconv.Atoi(m[2])
	if calls != (chunks+31)/32 {
		t.Fatalf("first ingest: %d chunks in %d embedding calls, want %d", chunks, calls, (chunks+31)/32)
	}
	if !regexp.MustCompile(`in \d+(\.\d+)?m?s: .* \(\d+\.\d chunks/s\)\n$`).MatchString(out) {
		t.Errorf("first ingest: no time or chunk rate in %q", out)
	}
	out, err = run(t, ingest...)
	if err != nil || !strings.Contains(out, "31 unchanged") || !strings.Contains(out, "0 chunks embedded in 0 calls") {
		t.Fatalf("unchanged ingest: %q %v", out, err)
	}
	t.Setenv("EMBEDDINGS_DIMENSIONS", "256")
	if out, err = run(t, ingest...); err == nil || !strings.Contains(err.Error(), "--reindex") {
		t.Fatalf("ingest with another dimension: %q %v", out, err)
	}
	t.Setenv("EMBEDDINGS_DIMENSIONS", "")

	add := []string{"appointments", "add", "--start", "2026-12-01T10:00:00+01:00", "--end", "2026-12-01T11:00:00+01:00", "--title", "Intro", "--key", "k1"}
	out, err = run(t, add...)
	id := regexp.MustCompile(`added ([0-9a-f-]{36})`).FindStringSubmatch(out)
	if err != nil || id == nil {
		t.Fatalf("add: %q %v", out, err)
	}
	if out, err = run(t, add...); err != nil || !strings.Contains(out, "already added "+id[1]) {
		t.Fatalf("add again with the same key: %q %v", out, err)
	}
	if out, err = run(t, "appointments", "add", "--start", "2026-12-01T10:30:00+01:00", "--end", "2026-12-01T11:30:00+01:00"); err != nil || !strings.Contains(out, "overlaps "+id[1]) {
		t.Fatalf("overlapping add: %q %v", out, err)
	}
	if out, err = run(t, "appointments", "add", "--start", "2026-12-01T11:00:00+01:00", "--end", "2026-12-01T10:00:00+01:00"); err == nil || !strings.Contains(err.Error(), "end must be after start") {
		t.Fatalf("reversed add: %q %v", out, err)
	}
	out, err = run(t, "appointments", "list", "--from", "2026-12-01T00:00:00Z", "--to", "2026-12-02T00:00:00Z")
	if err != nil || strings.Count(out, "active") != 2 || !strings.Contains(out, "Intro") {
		t.Fatalf("list: %q %v", out, err)
	}
	if out, err = run(t, "appointments", "cancel", id[1]); err != nil || !strings.Contains(out, "cancelled "+id[1]) {
		t.Fatalf("cancel: %q %v", out, err)
	}
	if _, err = run(t, "appointments", "cancel", "no-such-id"); err == nil || !strings.Contains(err.Error(), "no booking") {
		t.Fatalf("cancel unknown: %v", err)
	}

	out, err = run(t, "usage", "--days", "1")
	if err != nil || !regexp.MustCompile(`embedding\s+ingest\s+ingest\s+`+strconv.Itoa(calls)+`\s`).MatchString(out) {
		t.Fatalf("usage: %q %v", out, err)
	}
	// A limited budget's line says its paced ceiling and the visitors' share.
	t.Setenv("LLM_DAILY_TOKEN_BUDGET", "240000")
	t.Setenv("BUDGET_PACING", "off")
	if out, err = run(t, "usage", "--days", "1"); err != nil ||
		!strings.Contains(out, "limit 240000 tokens, paced ceiling now 240000; a visitor's share 12000, reached by 0 today") ||
		!strings.Contains(out, "embedding budget") || !strings.Contains(out, "unlimited") {
		t.Fatalf("usage with an LLM budget: %q %v", out, err)
	}
}

// TestRetention: `sitetools prune` applies the retention once, and serve applies it by
// itself at start-up (and every hour after).
func TestRetention(t *testing.T) {
	url := pgtest.NewURL(t)
	t.Setenv("DATABASE_URL", url)
	if out, err := run(t, "migrate"); err != nil {
		t.Fatalf("migrate: %q %v", out, err)
	}
	db, err := postgres.Open(context.Background(), url, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	ledgerRows := func() int {
		var n int
		if err := db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM ledger`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	addOld := func() {
		if _, err := db.Pool.Exec(context.Background(), `INSERT INTO ledger (at, kind, channel, tool, model, tokens, cache_hit, outcome)
			VALUES (now() - interval '11 days', 'llm', 'chat', 'chat', 'm', 1, false, 'ok'),
			       (now() - interval '9 days', 'llm', 'chat', 'chat', 'm', 1, false, 'ok')`); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("LEDGER_RETENTION_DAYS", "10")

	addOld()
	out, err := run(t, "prune")
	if err != nil || !regexp.MustCompile(`ledger\s+1 deleted  \(older than 10 days\)`).MatchString(out) {
		t.Fatalf("prune: %q %v", out, err)
	}
	if n := ledgerRows(); n != 1 {
		t.Fatalf("%d ledger rows after prune; want 1", n)
	}

	addOld()
	t.Setenv("LISTEN_ADDR", "127.0.0.1:0")
	t.Setenv("ADMIN_LISTEN_ADDR", "off")
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		var out bytes.Buffer
		served <- cli.Run(ctx, []string{"serve"}, &out, &out)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for tick := time.NewTicker(10 * time.Millisecond); ledgerRows() != 2; <-tick.C {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not prune within 30s: %d ledger rows", ledgerRows())
		}
	}
	stop()
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
}

// TestFailedFirstIngestLeavesNoTrace: a first ingest whose provider refuses every request
// stops with the provider's own explanation, and leaves the index without a model, so
// that any model can be configured next.
func TestFailedFirstIngestLeavesNoTrace(t *testing.T) {
	url := pgtest.NewURL(t)
	t.Setenv("DATABASE_URL", url)
	if out, err := run(t, "migrate"); err != nil {
		t.Fatalf("migrate: %q %v", out, err)
	}
	provider := llmtest.NewServer(t, 64)
	provider.SetFail(http.StatusBadRequest)
	t.Setenv("EMBEDDINGS_PROVIDER", "openai")
	t.Setenv("EMBEDDINGS_BASE_URL", provider.BaseURL())
	t.Setenv("EMBEDDINGS_MODEL", "nomic-embed-text")
	t.Setenv("EMBEDDINGS_DIMENSIONS", "64")
	out, err := run(t, "ingest", "--dir", "../../deploy/demo/site", "--base-url", "https://northwind.example")
	// llmtest answers a failure with OpenAI's error body, the status text as its message.
	if err == nil || !strings.Contains(err.Error(), "provider answered 400 Bad Request (server_error): Bad Request") {
		t.Fatalf("ingest: %q %v", out, err)
	}
	if provider.Calls() != 1 {
		t.Errorf("%d provider calls; a refused request is not worth repeating", provider.Calls())
	}
	db, err := postgres.Open(context.Background(), url, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	var models, pages int
	if err := db.Pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM index_meta), (SELECT count(*) FROM pages)`).Scan(&models, &pages); err != nil {
		t.Fatal(err)
	}
	if models != 0 || pages != 0 {
		t.Errorf("after the failed first ingest: %d model records, %d pages; want none", models, pages)
	}
}
