package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
	"github.com/sitetools/sitetools/internal/testkit"
)

// TestReplicasShareOneBudget: two sitetools processes on one database, driven at once
// with distinct queries (no cache can answer them), never charge the provider more
// than EMBEDDINGS_DAILY_TOKEN_BUDGET between them; what the budget cannot cover is
// answered from full-text, marked degraded.
func TestReplicasShareOneBudget(t *testing.T) {
	const (
		budget   = 150
		replicas = 2
		queries  = 30 // per replica, each different
		workers  = 6  // concurrent requests per replica
	)
	provider := llmtest.NewServer(t, 64)
	dbURL := pgtest.NewURL(t)
	vars := map[string]string{
		"DATABASE_URL":          dbURL,
		"ADMIN_LISTEN_ADDR":     "off",
		"RATE_LIMIT_PER_MINUTE": "0",
		"EMBEDDINGS_PROVIDER":   "openai",
		"EMBEDDINGS_BASE_URL":   provider.BaseURL(),
		"EMBEDDINGS_MODEL":      "fake-embedding",
		"EMBEDDINGS_DIMENSIONS": "64",
		// The day's limit, from one client at any hour: no share, no pacing.
		"EMBEDDINGS_CLIENT_DAILY_SHARE": "0",
		"LLM_CLIENT_DAILY_SHARE":        "0",
		"BUDGET_PACING":                 "off",
		"EMBEDDINGS_DAILY_TOKEN_BUDGET": strconv.Itoa(budget),
	}
	// Ingest embeds the pages: billed by the provider, but not from the query budget.
	testkit.Run(t, binary, vars, "ingest", "--dir", filepath.Join(repoRoot(), "deploy", "demo", "site"), "--base-url", "https://example.com")
	ingested := provider.Tokens()
	if ingested == 0 {
		t.Fatal("ingest made no embedding call")
	}

	clients := startReplicas(t, vars, replicas)

	topics := []string{"accessibility audit", "cloud cost review", "privacy engineering", "data pipelines", "pricing", "headless CMS"}
	type outcome struct{ answered, degraded int }
	var (
		mu      sync.Mutex
		results = map[string]int{} // degraded reason ("" for none) → count
		perRep  = make([]outcome, replicas)
		errs    []string
		wg      sync.WaitGroup
	)
	for r, c := range clients {
		jobs := make(chan string)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for q := range jobs {
					degraded, err := search(c, q)
					mu.Lock()
					if err != nil {
						errs = append(errs, err.Error())
					} else {
						results[degraded]++
						perRep[r].answered++
						if degraded != "" {
							perRep[r].degraded++
						}
					}
					mu.Unlock()
				}
			}()
		}
		go func() {
			defer close(jobs)
			for i := range queries {
				jobs <- fmt.Sprintf("%s question %d from replica %d", topics[i%len(topics)], i, r)
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d searches failed, e.g. %s", len(errs), errs[0])
	}

	charged := provider.Tokens() - ingested
	t.Logf("budget %d tokens: provider charged %d for queries; answers %v; per replica (answered, degraded) %v", budget, charged, results, perRep)
	if charged > budget {
		t.Errorf("the provider charged %d tokens for queries, over the shared budget of %d", charged, budget)
	}
	if charged == 0 || results[""] == 0 {
		t.Error("no query was embedded: the budget was never used")
	}
	if results["embedding_budget_exhausted"] == 0 {
		t.Errorf("no search degraded although %d queries cannot fit in %d tokens", replicas*queries, budget)
	}
	if n := len(results); n > 2 || results[""]+results["embedding_budget_exhausted"] != replicas*queries {
		t.Errorf("answers %v, want only full and embedding_budget_exhausted", results)
	}

	checkBooks(t, dbURL, charged)
}

// search calls search_site and returns its degraded field.
func search(c *http.Client, query string) (string, error) {
	body, _ := json.Marshal(map[string]any{"name": "search_site", "arguments": map[string]any{"query": query}})
	resp, err := c.Post("http://sitetools/api/chat/tools", "application/json", strings.NewReader(string(body)))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var res struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			Results  []json.RawMessage `json:"results"`
			Degraded string            `json:"degraded"`
		} `json:"structuredContent"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || resp.StatusCode != http.StatusOK || res.IsError {
		return "", fmt.Errorf("search %q: status %d, isError %v, %v", query, resp.StatusCode, res.IsError, err)
	}
	return res.StructuredContent.Degraded, nil
}

// checkBooks: the budget's books agree with the provider's bill, nothing stays reserved,
// and the ledger has every charged token.
func checkBooks(t *testing.T, dbURL string, charged int) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// Settled spend reaches the day's row within a fraction of a second of the call,
	// and idle replicas give back their leases.
	var used, reserved, ledger int64
	testkit.Eventually(5*time.Second, func() bool {
		err := conn.QueryRow(ctx, `SELECT used, reserved FROM budgets WHERE kind = 'embedding'`).Scan(&used, &reserved)
		return err == nil && used == int64(charged) && reserved == 0
	})
	if err := conn.QueryRow(ctx, `SELECT coalesce(sum(tokens), 0) FROM ledger WHERE kind = 'embedding' AND tool = 'search_site'`).Scan(&ledger); err != nil {
		t.Fatal(err)
	}
	if used != int64(charged) || reserved != 0 || ledger != int64(charged) {
		t.Errorf("budget used %d reserved %d, ledger %d tokens; the provider charged %d", used, reserved, ledger, charged)
	}
}

// startReplicas starts n processes of serve with vars, each on a socket of its own, and
// returns a client of each.
func startReplicas(t *testing.T, vars map[string]string, n int) []*http.Client {
	t.Helper()
	var clients []*http.Client
	for i := range n {
		sock := filepath.Join(t.TempDir(), fmt.Sprintf("r%d.sock", i))
		v := map[string]string{"LISTEN_ADDR": "unix:" + sock}
		for k, val := range vars {
			v[k] = val
		}
		p := testkit.Start(t, binary, v, "serve")
		c := testkit.UnixClient(sock)
		waitReady(t, p, c)
		clients = append(clients, c)
	}
	return clients
}
