package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/sitetools/sitetools/internal/config"
	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
	"github.com/sitetools/sitetools/internal/testkit"
)

// The model server the compose file starts, as this test plays it: Ollama on a CPU
// embeds one request at a time at about this much per input, and a proxy in front of
// it gives up on a request after this long.
const (
	cpuPerInput = 80 * time.Millisecond
	proxyCap    = 5 * time.Second
)

// taskPrefixes are the texts an embedding model expects before a query and before a
// passage, for the models the compose file may name by default (the model cards).
var taskPrefixes = map[string]struct{ query, document string }{
	"embeddinggemma": {"task: search result | query: ", "title: none | text: "},
}

// TestComposeRun runs what `docker compose -f deploy/compose.yaml up` runs — migrate,
// ingest of the demo site, serve — with the compose file's own environment and
// commands, on this machine: the binary instead of the image, a fresh database instead
// of the postgres service, and instead of Ollama a fake that embeds like Ollama on a CPU
// behind a proxy that answers 504 past 5 s. Only what must point at this machine is
// replaced; the model, its dimension, the deadlines, budgets and batch size are the
// compose file's (or, where it sets none, sitetools' defaults).
func TestComposeRun(t *testing.T) {
	if os.Getenv("TEST_DATABASE_URL") == "" {
		t.Skip("TEST_DATABASE_URL is not set: `make test` runs this test against the PostgreSQL with pgvector it starts")
	}
	bin := sitetoolsBinary(t)
	p, err := loadCompose(t, exampleEnv(t))
	if err != nil {
		t.Fatalf("deploy/compose.yaml does not load: %v", err)
	}
	svc := p.Services["sitetools"]
	model := deref(svc.Environment["EMBEDDINGS_MODEL"])
	prefix, ok := taskPrefixes[model]
	if !ok {
		t.Fatalf("compose's embedding model %q has no task prefixes in this test's table", model)
	}
	// The dimension and the batch size as ingest reads them: compose's, or the defaults.
	ingestCfg, err := config.Load(func(k string) string { return deref(p.Services["ingest"].Environment[k]) }, config.AreaEmbeddings)
	if err != nil {
		t.Fatalf("the ingest service's configuration does not load: %v", err)
	}
	dims, batch := ingestCfg.Embeddings.Dimensions, ingestCfg.Embeddings.BatchSize

	fake := llmtest.NewServer(t, dims)
	fake.SetCPU(cpuPerInput, proxyCap)
	fake.RecordTexts()
	statuses := newStatusLog(t, fake.URL)

	dbURL := pgtest.NewEmptyURL(t)
	provider := statuses.URL + "/v1"
	listen, admin := testkit.FreeAddr(t), testkit.FreeAddr(t)
	migrateEnv, migrateCmd := localService(t, p, "migrate", map[string]string{
		"DATABASE_URL": dbURL, "EMBEDDINGS_BASE_URL": provider,
	})
	ingestEnv, ingestCmd := localService(t, p, "ingest", map[string]string{
		"DATABASE_URL": dbURL, "EMBEDDINGS_BASE_URL": provider,
	})
	serveEnv, serveCmd := localService(t, p, "sitetools", map[string]string{
		"DATABASE_URL": dbURL, "EMBEDDINGS_BASE_URL": provider, "LLM_BASE_URL": provider,
		"LISTEN_ADDR": listen, "ADMIN_LISTEN_ADDR": admin,
	})

	t.Logf("sitetools %s: %s", strings.Join(migrateCmd, " "), strings.TrimSpace(testkit.Run(t, bin, migrateEnv, migrateCmd...)))

	start := time.Now()
	ingest := testkit.Start(t, bin, ingestEnv, ingestCmd...)
	if err := ingest.Wait(t, 5*time.Minute); err != nil {
		t.Fatalf("sitetools %s: %v; the model server received requests of %v inputs, answered %v",
			strings.Join(ingestCmd, " "), err, fake.Requests(), statuses.codes())
	}
	took := time.Since(start)
	t.Logf("sitetools %s took %v:\n%s", strings.Join(ingestCmd, " "), took.Round(10*time.Millisecond), ingest.Out.String())

	checkIngest(t, ingestRun{fake: fake, statuses: statuses, dbURL: dbURL, model: model, dims: dims, batch: batch, prefix: prefix.document, took: took})

	serve := testkit.Start(t, bin, serveEnv, serveCmd...)
	checkSearch(t, fake, "http://"+listen, prefix.query, serve)
	if err := serve.Stop(t); err != nil {
		t.Errorf("serve did not stop cleanly: %v", err)
	}
}

// ingestRun is what TestComposeRun's ingest left behind, for checkIngest.
type ingestRun struct {
	fake         *llmtest.Server
	statuses     *statusLog
	dbURL, model string
	dims, batch  int
	prefix       string // the model's document prefix
	took         time.Duration
}

// checkIngest checks what the model server received and answered during the ingest, and
// what the index holds after it.
func checkIngest(t *testing.T, r ingestRun) {
	t.Helper()
	fake, statuses, dbURL, model, dims, batch, took := r.fake, r.statuses, r.dbURL, r.model, r.dims, r.batch, r.took
	requests, texts, codes := fake.Requests(), fake.Texts(), statuses.codes()
	distinct, indexedModel, indexedDims := indexState(t, dbURL)
	if indexedModel != model || indexedDims != dims {
		t.Errorf("index_meta holds %s/%d, want compose's %s/%d", indexedModel, indexedDims, model, dims)
	}
	t.Run("ingest requests", func(t *testing.T) {
		if len(codes) != len(requests) {
			t.Fatalf("the proxy answered %d requests, the model server received %d", len(codes), len(requests))
		}
		for i, n := range requests {
			if n > batch {
				t.Errorf("request %d carried %d inputs, more than the batch size %d", i+1, n, batch)
			}
			// A 504 means the model server computed for nothing: with the defaults, a
			// batch must fit in the proxy's time.
			if codes[i] != http.StatusOK {
				t.Errorf("request %d (%d inputs) was answered %d", i+1, n, codes[i])
			}
		}
		// Every chunk is embedded once, in full batches but the last: a batch sent again,
		// whole or in parts, costs more requests than this.
		if want := (distinct + batch - 1) / batch; len(requests) != want {
			t.Errorf("%d requests for %d chunks in batches of %d, want %d: %v", len(requests), distinct, batch, want, requests)
		}
		if got := fake.Inputs(); got != distinct {
			t.Errorf("the model server embedded %d inputs, the index holds %d distinct chunks", got, distinct)
		}
		t.Logf("ingest: %d chunks in %d requests %v (%v an input, the proxy's cap %v) in %v",
			distinct, len(requests), requests, cpuPerInput, proxyCap, took.Round(10*time.Millisecond))
	})
	t.Run("document prefix", func(t *testing.T) {
		if len(texts) != distinct {
			t.Errorf("the model server embedded %d texts, want %d", len(texts), distinct)
		}
		for _, text := range texts {
			if !strings.HasPrefix(text, r.prefix) {
				t.Fatalf("a document was embedded without %q:\n%.120s", r.prefix, text)
			}
		}
	})

}

// checkSearch searches through the running service: the vector half must run, and the
// model server must receive the query once, after the model's query prefix.
func checkSearch(t *testing.T, fake *llmtest.Server, base, queryPrefix string, serve *testkit.Proc) {
	t.Helper()
	before := len(fake.Texts())
	client := &http.Client{Timeout: 30 * time.Second}
	testkit.WaitReady(t, client, base+"/readyz", serve.Alive)
	const query = "accessibility audit price"
	results, degraded := searchSite(t, client, base, query)
	if degraded != nil {
		t.Errorf("search_site degraded (%s): the vector half did not run", degraded)
	}
	if len(results) == 0 {
		t.Error("search_site found nothing")
	}
	queries := fake.Texts()[before:]
	if len(queries) != 1 || !strings.HasPrefix(queries[0], queryPrefix+query) {
		t.Errorf("the model server received %q for the search, want one text that starts with %q", queries, queryPrefix+query)
	}
	t.Logf("serve: %d results; %d provider calls in all", len(results), fake.Calls())
}

// sitetoolsBinary is SITETOOLS_BIN (make test builds it), else a build of the
// repository's main package.
func sitetoolsBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("SITETOOLS_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "sitetools")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	build.Dir = root(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// localService returns the environment and command of a compose service as compose
// resolves them, for a process on this machine: every key of local replaced (each must
// be set by the service), and every path inside one of the service's volumes mapped to
// the host's file. It fails when a value still names a host of the compose network.
func localService(t *testing.T, p *types.Project, name string, local map[string]string) (map[string]string, []string) {
	t.Helper()
	s, ok := p.Services[name]
	if !ok {
		t.Fatalf("compose has no service %s", name)
	}
	hostPath := func(v string) string {
		for _, vol := range s.Volumes {
			if v == vol.Target || strings.HasPrefix(v, vol.Target+"/") {
				return vol.Source + strings.TrimPrefix(v, vol.Target)
			}
		}
		return v
	}
	env := map[string]string{}
	var changed []string
	for k, v := range s.Environment {
		value := deref(v)
		if l, ok := local[k]; ok {
			env[k] = l
		} else {
			env[k] = hostPath(value)
		}
		if env[k] != value {
			changed = append(changed, k)
		}
	}
	for k := range local {
		if _, ok := s.Environment[k]; !ok {
			t.Fatalf("compose's %s service does not set %s", name, k)
		}
	}
	cmd := make([]string, len(s.Command))
	for i, a := range s.Command {
		cmd[i] = hostPath(a)
	}
	for k, v := range env {
		for other := range p.Services {
			if strings.Contains(v, "//"+other+":") || strings.Contains(v, "@"+other+":") {
				t.Fatalf("%s: %s=%q still points into the compose network", name, k, v)
			}
		}
	}
	slices.Sort(changed)
	t.Logf("%s: compose's environment with %s for this machine; command %q", name, strings.Join(changed, ", "), cmd)
	return env, cmd
}

// statusLog is the proxy of the compose setup that stands in front of the model
// server: it forwards every request and records the status of each answer in order.
type statusLog struct {
	*httptest.Server
	mu     sync.Mutex
	status []int
}

func newStatusLog(t *testing.T, target string) *statusLog {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	l := &statusLog{}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.ModifyResponse = func(resp *http.Response) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.status = append(l.status, resp.StatusCode)
		return nil
	}
	proxy.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		l.mu.Lock()
		l.status = append(l.status, http.StatusBadGateway)
		l.mu.Unlock()
		w.WriteHeader(http.StatusBadGateway)
	}
	l.Server = httptest.NewServer(proxy)
	t.Cleanup(l.Close)
	return l
}

func (l *statusLog) codes() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.status)
}

// indexState is what the index holds: its distinct chunk texts, and the model and
// dimension of index_meta.
func indexState(t *testing.T, dbURL string) (distinct int, model string, dims int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := postgres.Open(ctx, dbURL, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Pool.QueryRow(ctx, "SELECT count(DISTINCT content_hash) FROM chunks").Scan(&distinct); err != nil {
		t.Fatal(err)
	}
	if err := db.Pool.QueryRow(ctx, "SELECT model, dimensions FROM index_meta").Scan(&model, &dims); err != nil {
		t.Fatalf("index_meta: %v", err)
	}
	if distinct == 0 {
		t.Fatal("the index holds no chunk")
	}
	return distinct, model, dims
}

// searchSite calls search_site through POST /api/chat/tools and returns its results
// and its degraded field (nil when absent).
func searchSite(t *testing.T, client *http.Client, base, query string) ([]json.RawMessage, json.RawMessage) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"name": "search_site", "arguments": map[string]string{"query": query}})
	resp, err := client.Post(base+"/api/chat/tools", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /api/chat/tools: %d %s", resp.StatusCode, raw)
	}
	var out struct {
		IsError           bool                       `json:"isError"`
		StructuredContent map[string]json.RawMessage `json:"structuredContent"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.IsError {
		t.Fatalf("search_site: %v %s", err, raw)
	}
	var results []json.RawMessage
	if err := json.Unmarshal(out.StructuredContent["results"], &results); err != nil {
		t.Fatalf("search_site results: %v %s", err, raw)
	}
	return results, out.StructuredContent["degraded"]
}
