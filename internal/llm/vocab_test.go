package llm

import (
	"testing"

	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// TestVocabHoldsEveryRank: the laid-out vocabulary answers every token of cl100k_base
// with its rank, and nothing else with any.
func TestVocabHoldsEveryRank(t *testing.T) {
	r, err := tiktokenloader.NewOfflineLoader().LoadTiktokenBpe("cl100k_base.tiktoken")
	if err != nil {
		t.Fatal(err)
	}
	v := newVocab(r)
	if len(v.ends) != len(r) {
		t.Fatalf("%d tokens laid out, want %d", len(v.ends), len(r))
	}
	for token, want := range r {
		if got, ok := v.rank(token); !ok || got != want {
			t.Fatalf("rank(%q) = %d, %v; want %d", token, got, ok, want)
		}
		// A token with a byte more or less is a token only where the vocabulary has it.
		for _, other := range []string{token + "\x00", "\xff" + token, token[1:]} {
			rank, inVocab := r[other]
			if got, ok := v.rank(other); ok != inVocab || got != rank && ok {
				t.Fatalf("rank(%q) = %d, %v; want %d, %v", other, got, ok, rank, inVocab)
			}
		}
	}
	for _, s := range []string{"", "\x00\x00\x00", "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"} {
		if _, ok := v.rank(s); ok {
			t.Errorf("rank(%q) found a token", s)
		}
	}
}
