package sitesearch_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestRelevance asks the hand-written questions of the demo site with the offline
// local embedder plus full-text, and requires the expected page in the top 3 for at
// least 90% of them.
func TestRelevance(t *testing.T) {
	b, err := os.ReadFile("../../internal/fixtures/search_questions.json")
	if err != nil {
		t.Fatal(err)
	}
	var questions []struct{ Question, Expected string }
	if err := json.Unmarshal(b, &questions); err != nil {
		t.Fatal(err)
	}
	if len(questions) < 20 {
		t.Fatalf("%d questions, want at least 20", len(questions))
	}
	e := newSearchEnv(t, envOptions{local: true})
	hits := 0
	for _, q := range questions {
		r := e.search(t, q.Question)
		var urls []string
		for _, h := range r.out.Results {
			urls = append(urls, strings.TrimPrefix(h.URL, baseURL))
		}
		if len(urls) > 3 {
			urls = urls[:3]
		}
		if slices.Contains(urls, q.Expected) {
			hits++
		} else {
			t.Logf("miss: %q want %s, got %v", q.Question, q.Expected, urls)
		}
	}
	rate := float64(hits) / float64(len(questions))
	t.Logf("top-3 hit rate %.1f%% (%d/%d)", 100*rate, hits, len(questions))
	if rate < 0.9 {
		t.Fatalf("top-3 hit rate %.1f%%, want at least 90%%", 100*rate)
	}
}

// TestRelevanceGermanAuditPrice is issue 24's question, as a German visitor of the demo
// asks it, with the demo's defaults (the local embedder and deploy/demo/synonyms.txt):
// the page that states the audit's price is among the first three, and the relay guides,
// which quote example questions and are noindex, are nowhere in the results.
func TestRelevanceGermanAuditPrice(t *testing.T) {
	e := newSearchEnv(t, envOptions{local: true, synonyms: "../../deploy/demo/synonyms.txt"})
	for _, q := range []string{
		"Was kostet ein Barrierefreiheits-Audit?",
		"Was kostet eine Barrierefreiheitsprüfung?",
		"Wie viel kostet ein Audit zur Barrierefreiheit?",
	} {
		t.Run(q, func(t *testing.T) {
			r := e.call(t, "search_site", map[string]any{"query": q, "limit": 10})
			if r.status != 200 {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			var urls []string
			for _, h := range r.out.Results {
				urls = append(urls, strings.TrimPrefix(h.URL, baseURL))
			}
			if i := slices.Index(urls, "/pricing"); i < 0 || i > 2 {
				t.Errorf("/pricing at %d (0-based), want in the first three: %v", i, urls)
			}
			for _, guide := range []string{"/try-it", "/de/try-it"} {
				if slices.Contains(urls, guide) {
					t.Errorf("the relay guide %s is among the results: %v", guide, urls)
				}
			}
		})
	}
}
