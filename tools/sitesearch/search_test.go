package sitesearch_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/app"
	"github.com/sitetools/sitetools/internal/app/apptest"
	"github.com/sitetools/sitetools/internal/budget"
	"github.com/sitetools/sitetools/internal/content"
	"github.com/sitetools/sitetools/internal/embedcache"
	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
	"github.com/sitetools/sitetools/internal/testkit"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

const demoSite = "../../deploy/demo/site"
const baseURL = "https://northwind.example"

type searchEnv struct {
	*apptest.Service
	db       *postgres.DB
	fake     *llmtest.Server
	external *countingEmbedder // the provider of envOptions.embeddings
	embedder llm.Embedder
}

type envOptions struct {
	budget   int64
	local    bool // the local embedder instead of the fake provider
	timeout  time.Duration
	maxChars int
	synonyms string // a synonyms file, as SEARCH_SYNONYMS_FILE
	prefixes llm.Prefixes
	lexical  bool // synonyms and corrections embedded with the query, as for the local embedder
	// provider, when set, is called with the fake provider before the demo is ingested.
	provider func(*llmtest.Server)
	// embeddings, when set, is a real provider used instead of the fake.
	embeddings *externalEmbeddings
}

// newSearchEnv ingests the demo site and serves search over real HTTP, with the
// embeddings of a fake OpenAI-compatible provider that counts calls and tokens.
func newSearchEnv(t *testing.T, o envOptions) *searchEnv {
	t.Helper()
	e := &searchEnv{Service: apptest.New(), db: pgtest.NewDB(t)}
	logger := e.Log
	var err error
	dims := 384
	switch {
	case o.local:
		e.embedder, err = llm.NewLocal(dims)
	case o.embeddings != nil:
		dims = o.embeddings.dimensions
		e.external, err = newExternalEmbedder(o.embeddings, llm.OpenAIOptions{Logger: logger})
		e.embedder = e.external
	default:
		e.fake = llmtest.NewServer(t, 384)
		if o.provider != nil {
			o.provider(e.fake)
		}
		e.embedder, err = llm.NewOpenAI(llm.OpenAIOptions{BaseURL: e.fake.BaseURL(), Model: "fake-embed", Dimensions: 384,
			Timeout: 2 * time.Second, MaxRetries: -1, Logger: logger})
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ledger := budget.NewLedger(e.db.Pool)
	in := &sitesearch.Ingester{Index: postgres.NewSiteIndex(e.db, dims), Embedder: e.embedder, Ledger: ledger, Prefixes: o.prefixes}
	if _, err := in.Sync(ctx, "dir:demo", walkDemo); err != nil {
		t.Fatal(err)
	}
	timeout := o.timeout
	if timeout == 0 {
		timeout = 2 * time.Second
	}
	qe, err := embedcache.NewQueryEmbedder(embedcache.QueryEmbedderOptions{
		Pool: e.db.Pool, Embedder: e.embedder, QueryPrefix: o.prefixes.Query, Budget: budget.NewBudget(e.db.Pool, "embedding", o.budget, nil),
		Ledger: ledger, PricePerMTok: 0.02, Timeout: timeout, Logger: logger, Registerer: e.Metrics,
	})
	if err != nil {
		t.Fatal(err)
	}
	synonyms, err := app.LoadSynonyms(o.synonyms)
	if err != nil {
		t.Fatal(err)
	}
	searchTools, err := sitesearch.Tools(sitesearch.Options{Index: postgres.NewSiteIndex(e.db, dims), Embedder: qe, MaxQueryChars: o.maxChars, MaxQueryTokens: 60, Synonyms: synonyms,
		LexicalEmbedder: o.local || o.lexical})
	if err != nil {
		t.Fatal(err)
	}
	e.Serve(t, apptest.Config(t, nil), app.Parts{DB: e.db, Register: apptest.Register(searchTools...)})
	return e
}

// walkDemo is the walk of the demo site.
var walkDemo = sitesearch.DirWalk(demoSite, baseURL)

type searchResult struct {
	status int
	body   []byte
	out    struct {
		Results []sitesearch.Hit `json:"results"`
		// Degraded is why only full-text ran.
		Degraded  string            `json:"degraded"`
		Corrected map[string]string `json:"corrected"`
	}
	errCode string
}

func (e *searchEnv) call(t testing.TB, name string, args any) searchResult {
	t.Helper()
	var r searchResult
	r.status, r.body = e.Call(t, name, args)
	var envelope struct {
		StructuredContent json.RawMessage `json:"structuredContent"`
		Error             struct{ Code string }
	}
	_ = json.Unmarshal(r.body, &envelope)
	r.errCode = envelope.Error.Code
	if len(envelope.StructuredContent) > 0 {
		_ = json.Unmarshal(envelope.StructuredContent, &r.out)
	}
	return r
}

func (e *searchEnv) search(t testing.TB, query string) searchResult {
	t.Helper()
	return e.call(t, "search_site", map[string]any{"query": query})
}

func TestSearchFindsThePage(t *testing.T) {
	e := newSearchEnv(t, envOptions{})
	r := e.search(t, "accessibility audit WCAG")
	if r.status != 200 || len(r.out.Results) == 0 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	top := r.out.Results[0]
	if !strings.Contains(top.URL, "accessibility") && !strings.Contains(top.URL, "wcag") {
		t.Fatalf("top result %s", top.URL)
	}
	if !strings.Contains(top.Snippet, "**") || len([]rune(top.Snippet)) > 330 {
		t.Fatalf("snippet not highlighted or not bounded: %q", top.Snippet)
	}
	if r.out.Degraded != "" {
		t.Fatalf("degraded %q", r.out.Degraded)
	}
	// Filters.
	r = e.call(t, "search_site", map[string]any{"query": "Kontakt Büro", "lang": "de", "limit": 3})
	for _, h := range r.out.Results {
		if !strings.Contains(h.URL, "/de/") {
			t.Fatalf("lang filter let %s through", h.URL)
		}
	}
	r = e.call(t, "search_site", map[string]any{"query": "cloud costs", "pathPrefix": "/blog/"})
	if len(r.out.Results) == 0 {
		t.Fatal("no blog results")
	}
	for _, h := range r.out.Results {
		if !strings.HasPrefix(h.URL, baseURL+"/blog/") {
			t.Fatalf("pathPrefix let %s through", h.URL)
		}
	}
}

func TestGetPage(t *testing.T) {
	e := newSearchEnv(t, envOptions{local: true})
	for _, ref := range []string{"/pricing", baseURL + "/pricing", baseURL + "/pricing#day-rates", "https://other.example/pricing"} {
		r := e.call(t, "get_page", map[string]any{"url": ref})
		var out struct {
			StructuredContent struct {
				Title, URL, Text string
				Truncated        bool
			}
			IsError bool
		}
		_ = json.Unmarshal(r.body, &out)
		if r.status != 200 || out.IsError || out.StructuredContent.URL != baseURL+"/pricing" || !strings.Contains(out.StructuredContent.Text, "#") || out.StructuredContent.Truncated {
			t.Fatalf("%s: %d %s", ref, r.status, r.body)
		}
	}
	r := e.call(t, "get_page", map[string]any{"url": "/no-such-page"})
	if r.status != 200 || !strings.Contains(string(r.body), `"isError":true`) || !strings.Contains(string(r.body), "search_site") {
		t.Fatalf("unknown page: %d %s", r.status, r.body)
	}
}

func TestQueryLimitsRejectBeforeAnyCall(t *testing.T) {
	e := newSearchEnv(t, envOptions{maxChars: 300})
	before := e.fake.Calls()
	r := e.search(t, strings.Repeat("a", 301))
	if r.status != 400 || r.errCode != "invalid_arguments" {
		t.Fatalf("301 characters: %d %s", r.status, r.body)
	}
	// Under 300 characters but far over the token estimate (60 here).
	r = e.search(t, strings.Repeat("🦜", 70))
	if r.status != 400 || r.errCode != "query_too_long" {
		t.Fatalf("too many tokens: %d %s", r.status, r.body)
	}
	if n := e.fake.Calls() - before; n != 0 {
		t.Fatalf("%d provider calls for rejected queries, want 0", n)
	}
}

func TestConcurrentIdenticalQueriesCostOneCall(t *testing.T) {
	e := newSearchEnv(t, envOptions{})
	e.fake.SetDelay(100 * time.Millisecond) // keep the first call in flight while the rest arrive
	before := e.fake.Calls()
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := e.search(t, "How do I book an intro call?"); r.status != 200 || r.out.Degraded != "" || len(r.out.Results) == 0 {
				t.Errorf("status %d degraded %q: %s", r.status, r.out.Degraded, r.body)
			}
		}()
	}
	wg.Wait()
	if n := e.fake.Calls() - before; n != 1 {
		t.Fatalf("%d provider calls for 50 identical concurrent queries, want 1", n)
	}
	e.fake.SetDelay(0)
	// Later, and differently spelled: served from the cache.
	if r := e.search(t, "  how do I book an INTRO call  "); r.status != 200 || len(r.out.Results) == 0 {
		t.Fatalf("repeat: %d", r.status)
	}
	if n := e.fake.Calls() - before; n != 1 {
		t.Fatalf("%d provider calls after a repeat, want 1", n)
	}
}

func TestBudgetIsNeverOverspent(t *testing.T) {
	const budget = 300
	e := newSearchEnv(t, envOptions{budget: budget})
	before := e.fake.Tokens()
	var wg sync.WaitGroup
	var mu sync.Mutex
	degraded := 0
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := e.search(t, "question number "+strings.Repeat("x", i%7)+" about cloud costs "+string(rune('a'+i%26))+string(rune('a'+i/26)))
			if r.status != 200 {
				t.Errorf("status %d: %s", r.status, r.body)
				return
			}
			if r.out.Degraded != "" {
				if r.out.Degraded != embedcache.DegradedBudget {
					t.Errorf("degraded %q", r.out.Degraded)
				}
				mu.Lock()
				degraded++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	charged := e.fake.Tokens() - before
	if charged > budget {
		t.Fatalf("provider charged %d tokens, budget %d", charged, budget)
	}
	if degraded == 0 || degraded == 100 {
		t.Fatalf("%d of 100 degraded: the budget should cover some and not all", degraded)
	}
	// Settled spend reaches the day's row within a fraction of a second, and the idle
	// lease is given back.
	var reserved, used int64
	testkit.Eventually(5*time.Second, func() bool {
		err := e.db.Pool.QueryRow(context.Background(), `SELECT reserved, used FROM budgets WHERE kind = 'embedding'`).Scan(&reserved, &used)
		return err == nil && reserved == 0 && used == int64(charged)
	})
	if reserved != 0 || used != int64(charged) {
		t.Fatalf("budget row reserved %d used %d, provider charged %d", reserved, used, charged)
	}
	t.Logf("budget %d: %d tokens charged, %d of 100 queries degraded", budget, charged, degraded)
}

func TestProviderDownDegradesToFullText(t *testing.T) {
	e := newSearchEnv(t, envOptions{timeout: 300 * time.Millisecond})
	e.fake.SetFail(http.StatusInternalServerError)
	r := e.search(t, "privacy policy cookies")
	if r.status != 200 || r.out.Degraded != embedcache.DegradedUnavailable || len(r.out.Results) == 0 {
		t.Fatalf("provider down: %d %s", r.status, r.body)
	}
	e.fake.SetFail(0)
	e.fake.SetDelay(2 * time.Second)
	start := time.Now()
	r = e.search(t, "team members")
	if r.status != 200 || r.out.Degraded != embedcache.DegradedUnavailable || len(r.out.Results) == 0 {
		t.Fatalf("provider slow: %d %s", r.status, r.body)
	}
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Fatalf("a slow provider held the search for %v", d)
	}
}

func TestReingest(t *testing.T) {
	e := newSearchEnv(t, envOptions{})
	ctx := context.Background()
	in := &sitesearch.Ingester{Index: postgres.NewSiteIndex(e.db, 384), Embedder: e.embedder}
	before := e.fake.Calls()
	st, err := in.Sync(ctx, "dir:demo", walkDemo)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.fake.Calls() - before; n != 0 || st.Unchanged != st.Pages || st.Pages < 20 {
		t.Fatalf("unchanged re-ingest: %d calls, %+v", n, st)
	}

	// Edit one paragraph of one page in a copy of the site.
	dir := t.TempDir()
	copyDir(t, demoSite, dir)
	page := filepath.Join(dir, "pricing.md")
	src, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	paras := strings.Split(string(src), "\n\n")
	edited := -1
	for i := len(paras) / 2; i < len(paras); i++ {
		if p := paras[i]; !strings.HasPrefix(p, "#") && len(p) > 80 {
			paras[i] = p + " We now also offer a one-day kickoff workshop."
			edited = i
			break
		}
	}
	if edited < 0 {
		t.Fatal("no paragraph to edit")
	}
	if err := os.WriteFile(page, []byte(strings.Join(paras, "\n\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	// And remove a page.
	if err := os.Remove(filepath.Join(dir, "faq.md")); err != nil {
		t.Fatal(err)
	}
	before, inputsBefore := e.fake.Calls(), e.fake.Inputs()
	st, err = in.Sync(ctx, "dir:demo", sitesearch.DirWalk(dir, baseURL))
	if err != nil {
		t.Fatal(err)
	}
	calls, inputs := e.fake.Calls()-before, e.fake.Inputs()-inputsBefore
	// One paragraph sits in one chunk, or two where chunks overlap.
	if calls != 1 || inputs < 1 || inputs > 2 || st.Updated != 1 || st.Removed != 1 || st.ChunksReused == 0 {
		t.Fatalf("after editing one paragraph: %d calls embedding %d chunks, %+v", calls, inputs, st)
	}
	if r := e.search(t, "kickoff workshop"); len(r.out.Results) == 0 || !strings.HasSuffix(r.out.Results[0].URL, "/pricing") {
		t.Fatalf("the edit is not searchable: %s", r.body)
	}
	if r := e.call(t, "get_page", map[string]any{"url": "/faq"}); !strings.Contains(string(r.body), `"isError":true`) {
		t.Fatalf("removed page still served: %s", r.body)
	}
	// A page the source failed to deliver this time (a timeout, a 5xx) is kept.
	st, err = in.Sync(ctx, "dir:demo", func(_ func(string) (sitesearch.PageState, bool), fn func(*content.Document) error) (sitesearch.WalkResult, error) {
		err := content.WalkDir(dir, baseURL, func(d *content.Document) error {
			if strings.HasSuffix(d.URL, "/pricing") {
				return nil
			}
			return fn(d)
		})
		return sitesearch.WalkResult{Failed: []string{baseURL + "/pricing"}}, err
	})
	if err != nil || st.Removed != 0 || st.Failed != 1 {
		t.Fatalf("failed fetch: %v %+v", err, st)
	}
	if r := e.call(t, "get_page", map[string]any{"url": "/pricing"}); strings.Contains(string(r.body), `"isError":true`) {
		t.Fatalf("a page whose fetch failed was removed: %s", r.body)
	}
}

func TestModelMismatchIsRefused(t *testing.T) {
	e := newSearchEnv(t, envOptions{local: true})
	other, _ := llm.NewLocal(256)
	store := postgres.NewSiteIndex(e.db, 256)
	in := &sitesearch.Ingester{Index: store, Embedder: other}
	err := store.CheckModel(context.Background(), in.Model())
	if err == nil || !strings.Contains(err.Error(), "--reindex") {
		t.Fatalf("CheckModel = %v", err)
	}
	if _, err := in.Sync(context.Background(), "dir:demo", walkDemo); err == nil {
		t.Fatal("ingest with another dimension was not refused")
	}
	in.Reindex = true
	if _, err := in.Sync(context.Background(), "dir:demo", walkDemo); err != nil {
		t.Fatalf("reindex: %v", err)
	}
	if err := store.CheckModel(context.Background(), in.Model()); err != nil {
		t.Fatalf("after reindex: %v", err)
	}
	// The same model with other task prefixes is another index too.
	prefixed := *in
	prefixed.Reindex, prefixed.Prefixes = false, llm.Prefixes{Query: "query: ", Document: "passage: "}
	err = store.CheckModel(context.Background(), prefixed.Model())
	if err == nil || !strings.Contains(err.Error(), "EMBEDDINGS_DOCUMENT_PREFIX") || !strings.Contains(err.Error(), "--reindex") {
		t.Fatalf("CheckModel with other prefixes = %v", err)
	}
	if _, err := prefixed.Sync(context.Background(), "dir:demo", walkDemo); err == nil {
		t.Fatal("ingest with other prefixes was not refused")
	}
}

// TestQueryTextIsNeverStored greps logs, metrics and every table for the query text.
func TestQueryTextIsNeverStored(t *testing.T) {
	e := newSearchEnv(t, envOptions{})
	const marker = "zebracornflakes quixotic"
	if r := e.search(t, marker); r.status != 200 {
		t.Fatalf("%d", r.status)
	}
	e.fake.SetFail(500)
	e.search(t, marker+" again")
	e.call(t, "search_site", map[string]any{"query": marker, "limit": 99})

	if strings.Contains(strings.ToLower(e.Logs.String()), "zebracornflakes") {
		t.Fatalf("a log line holds the query:\n%s", e.Logs.String())
	}
	if metrics := e.MetricsText(t); strings.Contains(metrics, "zebracornflakes") || !strings.Contains(metrics, "sitetools_embedding_queries_total") {
		t.Fatal("metrics hold the query, or lack the embedding series")
	}
	ctx := context.Background()
	rows, err := e.db.Pool.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		_ = rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	if len(tables) < 5 {
		t.Fatalf("tables %v", tables)
	}
	for _, table := range tables {
		var n int
		q := `SELECT count(*) FROM ` + table + ` x WHERE lower(x::text) LIKE '%zebracornflakes%'`
		if err := e.db.Pool.QueryRow(ctx, q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		if n != 0 {
			t.Fatalf("table %s holds the query in %d rows", table, n)
		}
	}
	var ledgerRows int
	_ = e.db.Pool.QueryRow(ctx, `SELECT count(*) FROM ledger WHERE channel = 'webmcp' AND tool = 'search_site'`).Scan(&ledgerRows)
	if ledgerRows < 2 {
		t.Fatalf("%d ledger rows for the searches, want at least 2 (a call and a failure)", ledgerRows)
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
