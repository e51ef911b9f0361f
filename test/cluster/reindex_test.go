package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
	"github.com/sitetools/sitetools/internal/testkit"
)

// modelLog is a proxy in front of a fake provider that records the model of every
// embeddings request it passes on, in order, and when the first arrived.
type modelLog struct {
	mu     sync.Mutex
	models []string
	first  time.Time
}

func newModelLog(t *testing.T, upstream string) (*modelLog, string) {
	t.Helper()
	l := &modelLog{}
	target, _ := url.Parse(upstream)
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal(body, &req)
		l.mu.Lock()
		if l.first.IsZero() {
			l.first = time.Now()
		}
		l.models = append(l.models, req.Model)
		l.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		proxy.ServeHTTP(w, r) // to upstream's path (its /v1) + the request's
	}))
	t.Cleanup(srv.Close)
	return l, srv.URL
}

func (l *modelLog) snapshot() ([]string, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.models), l.first
}

// searchResult is one search_site answer as a searcher gets it.
type searchResult struct {
	at       time.Time
	status   int
	results  int
	degraded string
	err      error
}

func searchCount(base, query string) searchResult {
	r := searchResult{at: time.Now()}
	body, _ := json.Marshal(map[string]any{"name": "search_site", "arguments": map[string]any{"query": query}})
	resp, err := httpClient.Post(base+"/api/chat/tools", "application/json", bytes.NewReader(body))
	if err != nil {
		r.err = err
		return r
	}
	defer resp.Body.Close()
	var out struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			Results  []json.RawMessage `json:"results"`
			Degraded string            `json:"degraded"`
		} `json:"structuredContent"`
	}
	r.status = resp.StatusCode
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.IsError {
		r.err = fmt.Errorf("status %d, isError %v, %v", resp.StatusCode, out.IsError, err)
	}
	r.results, r.degraded = len(out.StructuredContent.Results), out.StructuredContent.Degraded
	return r
}

// reindexSetup is a database with the demo site indexed by "fake-old" (64 dimensions),
// and two replicas on it: one configured with that model, one with "fake-new" (48), both
// embedding queries through queries.
type reindexSetup struct {
	dbURL, site string
	newer       map[string]string // the new configuration
	bases       []string
	admins      []string
	queries     *modelLog
}

func startReindexSetup(t *testing.T) *reindexSetup {
	t.Helper()
	provider := llmtest.NewServer(t, 64)
	queries, viaLog := newModelLog(t, provider.BaseURL())
	r := &reindexSetup{dbURL: pgtest.NewURL(t), site: filepath.Join(repoRoot(), "deploy", "demo", "site"), queries: queries}
	old := map[string]string{
		"DATABASE_URL": r.dbURL, "ADMIN_TOKEN": adminToken, "RATE_LIMIT_PER_MINUTE": "0",
		"EMBEDDINGS_PROVIDER": "openai", "EMBEDDINGS_BASE_URL": viaLog,
		"EMBEDDINGS_MODEL": "fake-old", "EMBEDDINGS_DIMENSIONS": "64",
		"EMBEDDINGS_CLIENT_DAILY_SHARE": "0", "BUDGET_PACING": "off",
	}
	r.newer = maps.Clone(old)
	r.newer["EMBEDDINGS_MODEL"], r.newer["EMBEDDINGS_DIMENSIONS"] = "fake-new", "48"
	testkit.Run(t, binary, old, "migrate")
	testkit.Run(t, binary, old, "ingest", "--dir", r.site, "--base-url", "https://example.com")
	addrs := freeAddrs(t, 4)
	for i, vars := range []map[string]string{old, r.newer} {
		vars = maps.Clone(vars)
		vars["LISTEN_ADDR"], vars["ADMIN_LISTEN_ADDR"] = addrs[2*i], addrs[2*i+1]
		testkit.Start(t, binary, vars, "serve")
		r.bases = append(r.bases, "http://"+addrs[2*i])
		r.admins = append(r.admins, "http://"+addrs[2*i+1])
		waitFor(t, 30*time.Second, "replica ready", func() bool { return get(r.bases[i], "/readyz") == nil })
	}
	return r
}

// searcher is a visitor who searches without pause, a new question each time, alternating the replicas.
// Each search embeds its query at least once, and the model of its last embedding is
// the one whose vectors answered it (a search that a switch overtook embeds again with
// the new model).
type searcher struct {
	r          *reindexSetup
	results    []searchResult
	answeredBy []string
	retried    int
}

func (v *searcher) search() {
	n := len(v.results)
	before, _ := v.r.queries.snapshot()
	v.results = append(v.results, searchCount(v.r.bases[n%2], fmt.Sprintf("%s appointment question %d", topics[n%len(topics)], n)))
	after, _ := v.r.queries.snapshot()
	made := after[len(before):]
	switch {
	case len(made) == 0:
		v.answeredBy = append(v.answeredBy, "none")
	default:
		v.answeredBy = append(v.answeredBy, made[len(made)-1])
		if len(made) > 1 {
			v.retried++
		}
	}
}

// A model and dimension change is built beside the live index: two replicas, one still
// configured with the model before and one with the new one, answer a searcher who
// searches without pause all through `sitetools ingest --reindex` from another process.
// Every answer is a 200 with results and its vector half; the answers come from the old
// model's vectors, then from the new one's, never the other way round; and the database
// ends with the new model's vectors alone.
func TestReindexWithoutAGap(t *testing.T) {
	r := startReindexSetup(t)
	slow := llmtest.NewServer(t, 64) // the rebuild's provider: slow, so that it takes a while
	slow.SetDelay(40 * time.Millisecond)
	ingests, slowURL := newModelLog(t, slow.BaseURL())
	v := &searcher{r: r}
	for range 10 {
		v.search()
	}
	rebuild := maps.Clone(r.newer)
	rebuild["EMBEDDINGS_BASE_URL"], rebuild["EMBEDDINGS_BATCH_SIZE"] = slowURL, "2"
	proc := testkit.Start(t, binary, rebuild, "ingest", "--dir", r.site, "--base-url", "https://example.com", "--reindex")
	building := 0.0 // the most chunks the metric showed built
	for proc.Alive() == nil {
		v.search()
		if len(v.results)%50 == 0 {
			building = max(building, metric(t, r.admins[0], "sitetools_index_rebuild_chunks", map[string]string{"of": "done"}))
		}
	}
	ended := time.Now()
	if err := proc.Err(); err != nil {
		t.Fatalf("ingest --reindex: %v\n%s", err, proc.Out.String())
	}
	for range 10 {
		v.search()
	}
	_, began := ingests.snapshot()
	during := 0
	for i, res := range v.results {
		if res.err != nil || res.status != http.StatusOK || res.results == 0 || res.degraded != "" {
			t.Errorf("search %d: status %d, %d results, degraded %q, err %v", i, res.status, res.results, res.degraded, res.err)
		}
		if res.at.After(began) && res.at.Before(ended) {
			during++
		}
	}
	if during < 10 {
		t.Errorf("only %d searches ran while the rebuild did; the test proves little", during)
	}
	switched := slices.Index(v.answeredBy, "fake-new")
	if switched <= 0 || slices.ContainsFunc(v.answeredBy[switched:], func(m string) bool { return m != "fake-new" }) ||
		slices.ContainsFunc(v.answeredBy[:switched], func(m string) bool { return m != "fake-old" }) {
		t.Errorf("searches answered by the vectors of, in order: %v; want fake-old, then fake-new only", v.answeredBy)
	}
	t.Logf("%d searches, %d during the rebuild; %d answered by the old model's vectors, %d by the new one's; %d embedded again after the switch overtook them",
		len(v.results), during, switched, len(v.results)-switched, v.retried)
	checkSwitchedTo(t, r.dbURL, "fake-new", 48)
	if after := metric(t, r.admins[1], "sitetools_index_rebuild_chunks", map[string]string{"of": "total"}); building == 0 || after != 0 {
		t.Errorf("sitetools_index_rebuild_chunks: at most %v chunks built seen during the rebuild, %v in all after it; want some, then 0", building, after)
	}
}

// checkSwitchedTo checks that the index holds model's vectors alone, of dims, one switch
// after the first ingest, with no rebuild left.
func checkSwitchedTo(t *testing.T, dbURL, model string, dims int) {
	t.Helper()
	conn := (&cluster{dbURL: dbURL}).DB(t)
	var have string
	var haveDims, generation, mixed, rebuilding int
	if err := conn.QueryRow(context.Background(), `SELECT model, dimensions, generation,
		(SELECT count(*) FROM chunks WHERE vector_dims(embedding) <> $1 OR embedding_next IS NOT NULL),
		(SELECT count(*) FROM index_rebuild) FROM index_meta`, dims).Scan(&have, &haveDims, &generation, &mixed, &rebuilding); err != nil {
		t.Fatal(err)
	}
	if have != model || haveDims != dims || generation != 2 || mixed != 0 || rebuilding != 0 {
		t.Errorf("after the switch: model %s, %d dimensions, generation %d, %d chunks not of it, %d rebuilds left", have, haveDims, generation, mixed, rebuilding)
	}
}

// With a sitemap, the publish hook rebuilds: a replica configured with a new model keeps
// searching with the index's model; a hook for some pages, or the timer, fails with the
// mismatch (a replica left with the old configuration must not undo a rebuild); a
// whole-site POST /admin/reindex rebuilds beside the live vectors and switches.
func TestReindexThroughThePublishHook(t *testing.T) {
	s := newSite(t, map[string]string{
		"/pricing": "Our plans start at nine euros; the quokkaplan suits small teams.",
		"/contact": "Write to the office in Leipzig for an appointment.",
	})
	provider := llmtest.NewServer(t, 64)
	dbURL := pgtest.NewURL(t)
	old := map[string]string{
		"DATABASE_URL": dbURL, "ADMIN_TOKEN": adminToken, "RATE_LIMIT_PER_MINUTE": "0",
		"EMBEDDINGS_PROVIDER": "openai", "EMBEDDINGS_BASE_URL": provider.BaseURL(),
		"EMBEDDINGS_MODEL": "fake-old", "EMBEDDINGS_DIMENSIONS": "64", "FETCH_ALLOW_PRIVATE": "true",
	}
	testkit.Run(t, binary, old, "migrate")
	testkit.Run(t, binary, old, "ingest", "--sitemap", s.URL+"/sitemap.xml")
	vars := maps.Clone(old)
	maps.Copy(vars, syncVars(s, "0"))
	vars["EMBEDDINGS_MODEL"], vars["EMBEDDINGS_DIMENSIONS"] = "fake-new", "32"
	addrs := freeAddrs(t, 2)
	vars["LISTEN_ADDR"], vars["ADMIN_LISTEN_ADDR"] = addrs[0], addrs[1]
	testkit.Start(t, binary, vars, "serve")
	base, adminBase := "http://"+addrs[0], "http://"+addrs[1]
	waitFor(t, 30*time.Second, "replica ready", func() bool { return get(base, "/readyz") == nil })
	if !found(t, base, "quokkaplan", s.URL+"/pricing") {
		t.Fatal("before the rebuild, a search with the index's model does not find the page")
	}

	if state, reason := hookOutcome(t, adminBase, `{"urls": ["/pricing"]}`); state != "failed" || !strings.Contains(reason, `POST /admin/reindex {"all": true}`) {
		t.Errorf("a hook for one page on an index of another model: %s (%s); want failed, naming the rebuild", state, reason)
	}
	if state, reason := hookOutcome(t, adminBase, `{"all": true}`); state != "done" {
		t.Fatalf("a whole-site hook: %s (%s); want done", state, reason)
	}
	checkSwitchedTo(t, dbURL, "fake-new", 32)
	if !found(t, base, "quokkaplan", s.URL+"/pricing") {
		t.Error("after the rebuild, a search does not find the page")
	}
}

// hookOutcome sends the publish hook body and waits for its job to end: its state and,
// if it failed, why.
func hookOutcome(t *testing.T, adminBase, body string) (state, reason string) {
	t.Helper()
	code, job := admin(t, "POST", adminBase+"/admin/reindex", body)
	if code != http.StatusAccepted {
		t.Fatalf("POST /admin/reindex %s: %d", body, code)
	}
	waitFor(t, 30*time.Second, "reindex job "+job.ID+" did not finish", func() bool {
		req, _ := http.NewRequest("GET", adminBase+"/admin/reindex/"+job.ID, nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var j struct{ State, Error string }
		if err := json.NewDecoder(resp.Body).Decode(&j); err != nil {
			t.Fatal(err)
		}
		state, reason = j.State, j.Error
		return state == "done" || state == "failed"
	})
	return state, reason
}
