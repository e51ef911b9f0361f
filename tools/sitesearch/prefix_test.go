package sitesearch_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/llm/llmtest"
)

// TestTaskPrefixesReachTheProvider: with a model's task prefixes, the provider sees the
// document prefix before every chunk it embeds and the query prefix before the query,
// which is otherwise exactly as asked: its synonyms are not embedded with it, so they
// change neither what is paid for nor what is cached.
func TestTaskPrefixesReachTheProvider(t *testing.T) {
	prefixes := llm.PresetPrefixes("nomic-embed-text")
	e := newSearchEnv(t, envOptions{prefixes: prefixes, synonyms: "../../deploy/demo/synonyms.txt",
		provider: func(s *llmtest.Server) { s.RecordTexts() }})
	docs := e.fake.Texts()
	if len(docs) == 0 {
		t.Fatal("the provider embedded no chunk")
	}
	for _, text := range docs {
		if !strings.HasPrefix(text, "search_document: ") || strings.HasPrefix(text, "search_document: search_document: ") {
			t.Fatalf("a chunk was sent as %q", text[:min(len(text), 60)])
		}
	}

	// "price" has synonyms in the demo's file (cost, fee…), and "audti" a correction.
	for _, query := range []string{"What does an accessibility audit price?", "accessibility audti"} {
		before, calls := len(e.fake.Texts()), e.fake.Calls()
		r := e.search(t, query)
		if r.status != 200 || r.out.Degraded != "" || len(r.out.Results) == 0 {
			t.Fatalf("%q: status %d: %s", query, r.status, r.body)
		}
		if got := e.fake.Texts()[before:]; !slices.Equal(got, []string{"search_query: " + query}) {
			t.Errorf("%q: the provider was sent %q, want the query as asked after its prefix", query, got)
		}
		if e.fake.Calls() != calls+1 {
			t.Errorf("%q: %d provider calls, want 1", query, e.fake.Calls()-calls)
		}
		e.search(t, query)
		if e.fake.Calls() != calls+1 {
			t.Errorf("%q: asked again, it cost another call", query)
		}
	}
}

// TestCrossLanguageVectorRanks: with a multilingual model, which embeds a German question
// and the English passage that answers it close together, the English page ranks first
// for the German question: neither the language of the question nor the full-text half
// keeps it out (German stop words match no German page).
func TestCrossLanguageVectorRanks(t *testing.T) {
	// Every word of it but one is a German stop word; "für" has an accent, which once kept
	// it in the index and made it match every German page.
	const question = "Wie hoch ist euer Tagessatz für mich?"
	same := make([]float32, 384)
	same[7] = 1
	// No synonyms: the German words reach the English page by the vector alone.
	e := newSearchEnv(t, envOptions{provider: func(s *llmtest.Server) {
		s.SetVector("Our standard day rate is", same)
		s.SetVector(question, same)
	}})
	r := e.search(t, question)
	if r.status != 200 || r.out.Degraded != "" || len(r.out.Results) == 0 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if top := r.out.Results[0]; !strings.HasSuffix(top.URL, "/pricing") || !slices.Contains(top.Matched, "vector") {
		t.Errorf("the first result is %s (%v), want the English pricing page by its vector; all: %s", top.URL, top.Matched, r.body)
	}
}

// TestPrefixIsBudgeted: the budget reserves for what is sent, the task prefix included. A
// long instruction (Qwen3-Embedding's, about 20 tokens) before a one-word query does not
// fit a budget of 15 tokens, so the search degrades before any call instead of the
// provider billing past the budget.
func TestPrefixIsBudgeted(t *testing.T) {
	e := newSearchEnv(t, envOptions{budget: 15, prefixes: llm.PresetPrefixes("qwen3-embedding")})
	calls := e.fake.Calls()
	r := e.search(t, "audit")
	if r.status != 200 || r.out.Degraded != "embedding_budget_exhausted" {
		t.Fatalf("status %d, degraded %q: %s", r.status, r.out.Degraded, r.body)
	}
	if e.fake.Calls() != calls {
		t.Errorf("%d provider calls past a budget the prefixed query does not fit", e.fake.Calls()-calls)
	}
}
