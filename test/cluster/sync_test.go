package cluster_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// site is a local web site with a sitemap whose pages change between syncs. It answers
// a conditional request for an unchanged page with 304 and counts, per path, the bodies
// it sent and the 304s; while gated, page requests wait for the gate to open.
type site struct {
	*httptest.Server
	mu       sync.Mutex
	pages    map[string]string // path → body text
	bodies   map[string]int
	notMod   map[string]int
	gate     chan struct{} // nil: open
	sitemaps int
}

func newSite(t *testing.T, pages map[string]string) *site {
	s := &site{pages: pages, bodies: map[string]int{}, notMod: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *site) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if r.URL.Path == "/sitemap.xml" {
		s.sitemaps++
		var b strings.Builder
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
		paths := make([]string, 0, len(s.pages))
		for p := range s.pages {
			paths = append(paths, p)
		}
		slices.Sort(paths)
		for _, p := range paths {
			fmt.Fprintf(&b, "<url><loc>%s%s</loc></url>", s.URL, p)
		}
		b.WriteString("</urlset>")
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/xml")
		io.WriteString(w, b.String())
		return
	}
	text, ok := s.pages[r.URL.Path]
	gate := s.gate
	s.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	if !ok {
		http.NotFound(w, r)
		return
	}
	page := fmt.Sprintf("<!doctype html><html lang=en><head><title>%s</title></head><body><main><h1>%s</h1><p>%s</p></main></body></html>",
		r.URL.Path, r.URL.Path, text)
	etag := fmt.Sprintf(`"%x"`, sha256.Sum256([]byte(page)))
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Header.Get("If-None-Match") == etag {
		s.notMod[r.URL.Path]++
		w.WriteHeader(http.StatusNotModified)
		return
	}
	s.bodies[r.URL.Path]++
	w.Header().Set("ETag", etag)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, page)
}

// set changes (or with text "" removes) the page at path.
func (s *site) set(path, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if text == "" {
		delete(s.pages, path)
		return
	}
	s.pages[path] = text
}

func (s *site) counts(path string) (bodies, notModified int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies[path], s.notMod[path]
}

// hold makes page requests wait until the returned function is called.
func (s *site) hold() (release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gate := make(chan struct{})
	s.gate = gate
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.gate == gate {
			close(gate)
			s.gate = nil
		}
	}
}

// syncVars are the variables that turn the sync on against s.
func syncVars(s *site, interval string) map[string]string {
	return map[string]string{"INGEST_SITEMAP_URL": s.URL + "/sitemap.xml", "INGEST_INTERVAL": interval, "FETCH_ALLOW_PRIVATE": "true"}
}

// found searches base for query and reports whether a hit is the page at url.
func found(t *testing.T, base, query, url string) bool {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"name": "search_site", "arguments": map[string]any{"query": query}})
	resp, err := httpClient.Post(base+"/api/chat/tools", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res struct {
		StructuredContent struct {
			Results []struct {
				URL string `json:"url"`
			} `json:"results"`
		} `json:"structuredContent"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || resp.StatusCode != 200 {
		t.Fatalf("search %q: %d %v", query, resp.StatusCode, err)
	}
	for _, h := range res.StructuredContent.Results {
		if h.URL == url {
			return true
		}
	}
	return false
}

type hookJob struct {
	ID    string `json:"id"`
	State string `json:"state"`
	Pages struct {
		Added, Updated, Unchanged, NotModified, Removed, Failed int
	} `json:"pages"`
	Error struct{ Code, Message string } `json:"error"`
}

// admin sends an admin API request to adminURL and decodes the answer.
func admin(t *testing.T, method, adminURL, body string) (int, hookJob) {
	t.Helper()
	req, _ := http.NewRequest(method, adminURL, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var j hookJob
	if err := json.NewDecoder(resp.Body).Decode(&j); err != nil {
		t.Fatalf("%s %s: %d: %v", method, adminURL, resp.StatusCode, err)
	}
	return resp.StatusCode, j
}

// waitJob polls the job until it is done or failed, and returns it.
func waitJob(t *testing.T, adminBase, id string) hookJob {
	t.Helper()
	var j hookJob
	waitFor(t, 30*time.Second, "reindex job "+id+" did not finish", func() bool {
		_, j = admin(t, "GET", adminBase+"/admin/reindex/"+id, "")
		return j.State == "done" || j.State == "failed"
	})
	return j
}

// TestSyncFollowsTheSite: with the publish hook, an edited page is found by its new
// text within 5 s of the 202, and an unchanged page asked for with it costs a 304 and no
// provider call; without the hook, an edit is found within one interval and a page
// gone from the sitemap disappears.
func TestSyncFollowsTheSite(t *testing.T) {
	s := newSite(t, map[string]string{
		"/pricing": "Our plans start at nine euros; the quokkaplan suits small teams.",
		"/about":   "We are a small studio that builds wombatcraft tools.",
		"/old":     "The dodoarchive holds last year's notes.",
	})
	c := startCluster(t, 1, syncVars(s, "0"))
	code, j := admin(t, "POST", c.Admin(0)+"/admin/reindex", `{"all": true}`)
	if code != 202 {
		t.Fatalf("hook for the whole site: %d %+v", code, j)
	}
	if j = waitJob(t, c.Admin(0), j.ID); j.State != "done" || j.Pages.Added != 3 {
		t.Fatalf("first sync: %+v; want done with 3 pages added", j)
	}
	if !found(t, c.URL(), "quokkaplan", s.URL+"/pricing") {
		t.Fatal("the first sync's pricing page is not found")
	}
	if code, j := admin(t, "POST", c.Admin(0)+"/admin/reindex", `{"urls": ["https://elsewhere.example/pricing"]}`); code != 400 || j.Error.Code != "invalid_arguments" || !strings.Contains(j.Error.Message, "elsewhere.example") {
		t.Errorf("hook for another origin: %d %+v; want 400 invalid_arguments naming the URL", code, j)
	}

	// The hook: /pricing edited, /about unchanged.
	s.set("/pricing", "Our plans start at eleven euros; the kangarooplan suits small teams.")
	c.Provider().RecordTexts()
	_, aboutNotModBefore := s.counts("/about")
	aboutBodiesBefore, _ := s.counts("/about")
	sent := time.Now()
	code, j = admin(t, "POST", c.Admin(0)+"/admin/reindex", `{"urls": ["/pricing", "`+s.URL+`/about"]}`)
	if code != 202 {
		t.Fatalf("hook: %d %+v", code, j)
	}
	waitFor(t, 5*time.Second, "the edited page is not found by its new text 5 s after the hook's 202", func() bool {
		return found(t, c.URL(), "kangarooplan", s.URL+"/pricing")
	})
	t.Logf("the edited page was found by its new text %v after the hook's 202", time.Since(sent).Round(time.Millisecond))
	j = waitJob(t, c.Admin(0), j.ID)
	aboutBodies, aboutNotMod := s.counts("/about")
	if j.State != "done" || j.Pages.Updated != 1 || j.Pages.NotModified != 1 || aboutNotMod != aboutNotModBefore+1 || aboutBodies != aboutBodiesBefore {
		t.Errorf("hook job %+v; the site sent /about %d more bodies and %d more 304s; want 1 updated, 1 not modified, one 304 and no body",
			j, aboutBodies-aboutBodiesBefore, aboutNotMod-aboutNotModBefore)
	}
	for _, text := range c.Provider().Texts() {
		if strings.Contains(text, "wombatcraft") {
			t.Errorf("the unchanged page reached the provider: %.100q", text)
		}
	}
	if found(t, c.URL(), "quokkaplan", s.URL+"/pricing") {
		t.Error("the edited page is still found by its old text")
	}

	// No hook: a sync every 2 s.
	const interval = 2 * time.Second
	c.RestartWith(map[string]string{"INGEST_INTERVAL": interval.String()})
	s.set("/about", "We are a small studio that builds platypusware tools.")
	s.set("/old", "")
	edited := time.Now()
	waitFor(t, 3*interval, "the page edited without a hook is not found within 3 intervals", func() bool {
		return found(t, c.URL(), "platypusware", s.URL+"/about")
	})
	took := time.Since(edited)
	t.Logf("without the hook, the edited page was found %v after the edit (INGEST_INTERVAL %v)", took.Round(time.Millisecond), interval)
	if took > interval*11/10+time.Second {
		t.Errorf("found %v after the edit; want within one interval (%v ±10 %%) and the sync's own second", took, interval)
	}
	waitFor(t, 2*interval, "the page gone from the sitemap is still found", func() bool {
		return !found(t, c.URL(), "dodoarchive", s.URL+"/old")
	})
	// The sync records itself once its pages are in the index.
	waitFor(t, 5*time.Second, "no sync on the timer was counted", func() bool {
		return metric(t, c.Admin(0), "sitetools_index_sync_runs_total", map[string]string{"trigger": "interval", "outcome": "ok"}) >= 1
	})
	if v := metric(t, c.Admin(0), "sitetools_index_last_sync_timestamp_seconds", nil); v < float64(edited.UnixNano())/1e9 {
		t.Errorf("sitetools_index_last_sync_timestamp_seconds = %v; want a time after the edit (%v)", v, float64(edited.UnixNano())/1e9)
	}
	if v := metric(t, c.Admin(0), "sitetools_index_sync_pages_total", map[string]string{"outcome": "removed"}); v != 1 {
		t.Errorf("sitetools_index_sync_pages_total{removed} = %v; want 1 (/old)", v)
	}
}

// syncRow is a row of index_syncs.
type syncRow struct {
	holder, state     string
	started, finished *time.Time
}

func syncRows(t *testing.T, conn *pgx.Conn) []syncRow {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := conn.Query(ctx, `SELECT holder, state, started_at, finished_at FROM index_syncs WHERE started_at IS NOT NULL ORDER BY started_at`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []syncRow
	for rows.Next() {
		var r syncRow
		if err := rows.Scan(&r.holder, &r.state, &r.started, &r.finished); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// TestSyncOneReplicaAtATime: two replicas sync every second; their runs never overlap,
// and when the one running a sync is killed, the other syncs at its next interval.
func TestSyncOneReplicaAtATime(t *testing.T) {
	pages := map[string]string{}
	for i := range 12 {
		pages[fmt.Sprintf("/p%d", i)] = fmt.Sprintf("Page %d of the echidnasite.", i)
	}
	s := newSite(t, pages)
	const interval = time.Second
	c := startCluster(t, 2, syncVars(s, interval.String()))
	db := c.DB(t)
	// A holder is host:pid:instance.
	holder := map[string]int{}
	for i := range 2 {
		holder[fmt.Sprintf(":%d:", c.Pid(i))] = i
	}
	replicaOf := func(h string) int {
		for part, i := range holder {
			if strings.Contains(h, part) {
				return i
			}
		}
		return -1
	}
	waitFor(t, 30*time.Second, "fewer than 6 syncs finished in 30 s", func() bool {
		n := 0
		for _, r := range syncRows(t, db) {
			if r.finished != nil {
				n++
			}
		}
		return n >= 6
	})
	rows := syncRows(t, db)
	for i := 1; i < len(rows); i++ {
		prev, cur := rows[i-1], rows[i]
		if prev.finished == nil || cur.started.Before(*prev.finished) {
			t.Errorf("sync of replica %d started at %v while replica %d's (from %v) had not finished", replicaOf(cur.holder),
				cur.started.Format(time.StampMilli), replicaOf(prev.holder), prev.started.Format(time.StampMilli))
		}
	}
	t.Logf("%d syncs, none overlapping", len(rows))

	release := s.hold()
	defer release()
	var running syncRow
	waitFor(t, 10*time.Second, "no sync ran into the held pages", func() bool {
		rs := syncRows(t, db)
		running = rs[len(rs)-1]
		return running.state == "running"
	})
	victim := replicaOf(running.holder)
	if victim < 0 {
		t.Fatalf("the running sync's holder %q is no replica", running.holder)
	}
	c.Kill(victim)
	killed := time.Now()
	release()
	other := 1 - victim
	waitFor(t, 3*interval+5*time.Second, "the surviving replica did not sync after the other was killed mid-sync", func() bool {
		for _, r := range syncRows(t, db) {
			if replicaOf(r.holder) == other && r.state == "done" && r.started.After(killed) {
				return true
			}
		}
		return false
	})
	t.Logf("replica %d killed mid-sync; replica %d synced %v later", victim, other, time.Since(killed).Round(time.Millisecond))
}
