package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/pdftext"
	"github.com/sitetools/sitetools/internal/pdftext/pdftexttest"
	"github.com/sitetools/sitetools/internal/testkit"
)

// TestDemoPDFInChat: the demo's price lists answer a question no page of the demo
// answers, in English and German; through serve, search_site has the PDF in its first
// three results with the page that answers it, and the chat (retrieval-only, no model)
// cites it with that page among its sources.
func TestDemoPDFInChat(t *testing.T) {
	c := startCluster(t, 1, nil)
	for _, tc := range []struct{ question, url string }{
		{"How much is an emergency call-out at the weekend?", "https://example.com/files/price-list-2026.pdf"},
		{"Was kostet ein Notfalleinsatz am Wochenende?", "https://example.com/de/dateien/preisliste-2026.pdf"},
	} {
		t.Run(tc.question, func(t *testing.T) {
			hits := searchHits(t, c.URL(), tc.question)
			at := -1
			for i, h := range hits {
				if h.URL == tc.url && h.Anchor == "page=2" && at < 0 {
					at = i
				}
			}
			if at < 0 || at > 2 {
				t.Errorf("search_site: %s#page=2 at %d, want in the first three: %+v", tc.url, at, hits)
			}
			sources := chatSources(t, c.URL(), tc.question)
			cited := false
			for _, s := range sources {
				cited = cited || (s.URL == tc.url && s.Anchor == "page=2")
			}
			if !cited {
				t.Errorf("the chat's sources do not cite %s#page=2: %+v", tc.url, sources)
			}
		})
	}
}

type citedHit struct {
	Title  string `json:"title"`
	URL    string `json:"url"`
	Anchor string `json:"anchor"`
}

// searchHits calls search_site through base and returns its results.
func searchHits(t *testing.T, base, query string) []citedHit {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"name": "search_site", "arguments": map[string]any{"query": query, "limit": 5}})
	resp, err := httpClient.Post(base+"/api/chat/tools", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res struct {
		StructuredContent struct {
			Results []citedHit `json:"results"`
		} `json:"structuredContent"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || resp.StatusCode != 200 {
		t.Fatalf("search %q: %d %v", query, resp.StatusCode, err)
	}
	return res.StructuredContent.Results
}

// chatSources asks the chat question and returns the items of its sources event.
func chatSources(t *testing.T, base, question string) []citedHit {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"conversationId": "pdf", "consent": true,
		"messages": []map[string]string{{"role": "user", "content": question}}})
	req, _ := http.NewRequest(http.MethodPost, base+"/api/chat", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events, err := testkit.NewEvents(resp.Body).Rest()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("chat: %d %v", resp.StatusCode, err)
	}
	for _, e := range events {
		if e.Name == "sources" {
			var s struct{ Items []citedHit }
			if err := json.Unmarshal(e.Data, &s); err != nil {
				t.Fatal(err)
			}
			return s.Items
		}
	}
	t.Fatalf("no sources event: %v", testkit.EventNames(events))
	return nil
}

// pdfCorpus is a site of good pages and PDFs, good and hostile: its sitemap lists the
// pages, a good PDF and a decompression bomb; its home page links to another good PDF
// and to the rest of the bad ones, which only the links lead to.
type pdfCorpus struct {
	*httptest.Server
	files   map[string][]byte
	pdfGets atomic.Int64
}

const corpusPages = 20

func newPDFCorpus(t *testing.T) *pdfCorpus {
	s := &pdfCorpus{files: map[string][]byte{
		"/files/listed.pdf":    pdftexttest.Document("Listed", "en", "Quillwort tariff, page one.", "Page two: the marram tariff.", "Page three: the samphire tariff."),
		"/files/linked.pdf":    pdftexttest.Document("Linked", "en", "Only a link leads to the glasswort tariff."),
		"/files/bomb.pdf":      pdftexttest.Bomb(1 << 30),
		"/files/encrypted.pdf": pdftexttest.Encrypted(),
		"/files/truncated.pdf": pdftexttest.Truncated(),
		"/files/objects.pdf":   pdftexttest.ManyObjects(100_000),
		"/files/deep.pdf":      pdftexttest.Deep(100_000),
	}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *pdfCorpus) serve(w http.ResponseWriter, r *http.Request) {
	page := func(title, body string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html lang="en"><head><title>%s</title></head><body><main><h1>%s</h1><p>%s</p></main></body></html>`, title, title, body)
	}
	switch p := r.URL.Path; {
	case p == "/sitemap.xml":
		var b strings.Builder
		b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
		for _, u := range append(corpusPaths(), "/files/listed.pdf", "/files/bomb.pdf") {
			fmt.Fprintf(&b, "<url><loc>%s%s</loc></url>", s.URL, u)
		}
		b.WriteString("</urlset>")
		w.Header().Set("Content-Type", "application/xml")
		_, _ = w.Write([]byte(b.String()))
	case p == "/":
		page("Home", `Tariffs: <a href="/files/linked.pdf">linked</a> <a href="/files/encrypted.pdf">encrypted</a> `+
			`<a href="/files/truncated.pdf">truncated</a> <a href="/files/objects.pdf">objects</a> <a href="/files/deep.pdf">deep</a> `+
			`<a href="https://elsewhere.example/files/foreign.pdf">another site's</a>`)
	case strings.HasPrefix(p, "/p/"):
		page("Page "+p[3:], "This page is about the word "+corpusWord(p[3:])+", and nothing else of note here.")
	case s.files[p] != nil:
		s.pdfGets.Add(1)
		w.Header().Set("Content-Type", "application/pdf")
		_, _ = w.Write(s.files[p])
	default:
		http.NotFound(w, r)
	}
}

func corpusPaths() []string {
	out := []string{"/"}
	for i := range corpusPages {
		out = append(out, fmt.Sprintf("/p/%d", i))
	}
	return out
}

func corpusWord(i string) string {
	return "heathland" + strings.Map(func(r rune) rune { return 'a' + (r - '0') }, i)
}

// TestSyncPDFCorpus: serve syncs a site whose PDFs are bad in every way a site can make
// them: each bad one is refused with its reason in serve's log, and nothing else fails:
// the sync is done, every page and every good PDF is indexed and found, at the page of
// the PDF that holds the word. The PDF reader's memory is capped: serve's resident set
// peaks less than pdfCap above what it was before the sync (the reader's 128 MB of
// PDFium memory, its compiled code loaded from the cache the demo's ingest filled, and
// the Go heap of a sync of 24 documents).
func TestSyncPDFCorpus(t *testing.T) {
	const pdfCap = 192 << 20
	s := newPDFCorpus(t)
	c := startCluster(t, 1, map[string]string{"INGEST_SITEMAP_URL": s.URL + "/sitemap.xml", "INGEST_INTERVAL": "0", "FETCH_ALLOW_PRIVATE": "true"})
	pid := c.Pid(0)
	idle := procStatus(t, pid, "VmRSS")
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
	began := time.Now()
	j := syncSite(t, c, 3*time.Minute)
	peak := procStatus(t, pid, "VmHWM")
	t.Logf("sync %s in %s, %d PDF requests; resident set %.1f MB before, peak %.1f MB (+%.1f MB)", j.State, time.Since(began).Round(time.Millisecond),
		s.pdfGets.Load(), float64(idle)/(1<<20), float64(peak)/(1<<20), float64(peak-idle)/(1<<20))
	// The pages, the listed and the linked PDF, and the deeply nested one, which PDFium
	// reads (its parser bounds the nesting) and which holds a line of text.
	if want := corpusPages + 4; j.State != "done" || j.Pages.Added != want || j.Pages.Failed != 0 {
		t.Fatalf("sync: %+v; want done, %d added, none failed", j, want)
	}
	log := c.replicas[0].proc.Out.String()
	for path, reason := range map[string]string{
		"/files/encrypted.pdf": "encrypted: reading it needs a password",
		"/files/truncated.pdf": "not a readable PDF (damaged, truncated or not a PDF)",
		"/files/objects.pdf":   "100000 pages, over the limit of 2000",
		"/files/bomb.pdf":      fmt.Sprintf("reading it needed more than %d MB of memory", pdftext.DefaultMemoryBytes>>20),
	} {
		if !logHas(log, "ingest: document refused", s.URL+path, reason) {
			t.Errorf("serve's log does not report %s as refused with %q", path, reason)
		}
	}
	if peak-idle >= pdfCap {
		t.Errorf("resident set peaked %.1f MB above the %.1f MB before; want less than %d MB", float64(peak-idle)/(1<<20), float64(idle)/(1<<20), pdfCap>>20)
	}
	for _, i := range []string{"0", "7", "19"} {
		if !found(t, c.URL(), corpusWord(i), s.URL+"/p/"+i) {
			t.Errorf("page %s is not found by its word", i)
		}
	}
	for query, want := range map[string]citedHit{
		"samphire tariff":  {URL: s.URL + "/files/listed.pdf", Anchor: "page=3"},
		"glasswort tariff": {URL: s.URL + "/files/linked.pdf", Anchor: "page=1"},
	} {
		if hits := searchHits(t, c.URL(), query); len(hits) == 0 || hits[0].URL != want.URL || hits[0].Anchor != want.Anchor {
			t.Errorf("%q: %+v; want first %s#%s", query, hits, want.URL, want.Anchor)
		}
	}
	var pdfs int
	if err := c.DB(t).QueryRow(context.Background(), `SELECT count(*) FROM pages WHERE url LIKE $1`, s.URL+"/%.pdf").Scan(&pdfs); err != nil || pdfs != 3 {
		t.Errorf("%d of the site's PDFs in the index (%v); want 3", pdfs, err)
	}
}

// logHas reports whether one line of log holds every one of parts.
func logHas(log string, parts ...string) bool {
	for _, line := range strings.Split(log, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}
