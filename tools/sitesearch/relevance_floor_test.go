package sitesearch_test

import (
	"encoding/json"
	"os"
	"testing"
)

// offTopic are searches the demo site has nothing for.
var offTopic = []string{
	"quantum chromodynamics lattice gauge", "best pizza in naples", "how tall is mount everest", "xyzzy plugh",
	"football world cup results", "recipe for banana bread", "Wie wird das Wetter morgen", "kubernetes pod eviction policy",
	"who won the oscars", "cheap flights to bali", "horse riding lessons", "diesel engine repair manual",
}

// TestRelevanceFloor measures the relevance floor the owner's report counts "searches
// that found nothing" by, as the demo runs (local embedder, the demo's synonyms): the
// 135 visitor questions of the relevance fixtures should count as found, the off-topic
// searches as not. README states the figures.
func TestRelevanceFloor(t *testing.T) {
	var questions []struct{ Question string }
	for _, f := range []string{"../../internal/fixtures/search_questions.json", "../../internal/fixtures/search_questions_visitors.json"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var qs []struct{ Question string }
		if err := json.Unmarshal(b, &qs); err != nil {
			t.Fatal(err)
		}
		questions = append(questions, qs...)
	}
	e := newSearchEnv(t, envOptions{local: true, synonyms: "../../deploy/demo/synonyms.txt"})
	notFound := func() float64 {
		families, err := e.Metrics.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var n float64
		for _, f := range families {
			if f.GetName() != "sitetools_searches_total" {
				continue
			}
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "found" && l.GetValue() == "false" {
						n += m.GetCounter().GetValue()
					}
				}
			}
		}
		return n
	}
	count := func(queries []string) (found int) {
		for _, q := range queries {
			before := notFound()
			if r := e.search(t, q); r.status != 200 {
				t.Fatalf("%q: status %d", q, r.status)
			}
			if notFound() == before {
				found++
			}
		}
		return found
	}
	var qs []string
	for _, q := range questions {
		qs = append(qs, q.Question)
	}
	foundQuestions, foundOffTopic := count(qs), count(offTopic)
	t.Logf("found: %d of %d questions, %d of %d off-topic searches", foundQuestions, len(qs), foundOffTopic, len(offTopic))
	if foundQuestions < len(qs)*70/100 || foundOffTopic > 3 {
		t.Fatalf("found %d of %d questions (want ≥ 70 %%) and %d of %d off-topic searches (want ≤ 3)", foundQuestions, len(qs), foundOffTopic, len(offTopic))
	}
}
