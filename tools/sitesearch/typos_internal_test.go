package sitesearch

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// candidatesIndex answers Candidates from a fixed vocabulary and records each call; the
// rest of Index is not used.
type candidatesIndex struct {
	Index
	held  map[string]bool
	close map[string][]Candidate
	calls [][]string
}

func (c *candidatesIndex) Candidates(_ context.Context, words []string) (map[string][]Candidate, error) {
	c.calls = append(c.calls, slices.Clone(words))
	out := map[string][]Candidate{}
	for _, w := range words {
		switch {
		case c.held[w]:
			out[w] = nil
		case c.close[w] != nil:
			out[w] = c.close[w]
		}
	}
	return out, nil
}

// TestKnownWordsSkipTheLookup: a word the index holds is looked up once and then not
// for a while; a misspelt word is looked up every time, and a held one again once it
// is forgotten.
func TestKnownWordsSkipTheLookup(t *testing.T) {
	idx := &candidatesIndex{
		held:  map[string]bool{"accessibility": true, "audits": true},
		close: map[string][]Candidate{"acessibility": {{Word: "accessibility", Chunks: 3, Similarity: 0.8}}},
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	s := &searcher{opts: Options{Index: idx}, known: newKnownWords(func() time.Time { return now })}
	correct := func(q string) map[string]string {
		t.Helper()
		out, err := s.correct(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := correct("Accessibility audits?"); len(got) != 0 {
		t.Errorf("corrected %v", got)
	}
	if got := correct("accessibility audits"); len(got) != 0 {
		t.Errorf("corrected %v", got)
	}
	if diff := cmp.Diff(map[string]string{"acessibility": "accessibility"}, correct("acessibility audits")); diff != "" {
		t.Errorf("corrected (-want +got):\n%s", diff)
	}
	correct("acessibility")
	now = now.Add(knownWordsFor + time.Second)
	correct("audits")
	want := [][]string{{"accessibility", "audits"}, {"acessibility"}, {"acessibility"}, {"audits"}}
	if diff := cmp.Diff(want, idx.calls); diff != "" {
		t.Errorf("lookups (-want +got):\n%s", diff)
	}
}
