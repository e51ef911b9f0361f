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
