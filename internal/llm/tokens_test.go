package llm_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/llm"
)

// The counts are cl100k_base's, as OpenAI's tokenizer gives them. The estimate that
// CountTokens falls back to would give different ones, so passing proves that the
// encoder loaded, from the embedded ranks: this machine has no route to their URL.
func TestCountTokens(t *testing.T) {
	if err := llm.LoadTokenizer(); err != nil {
		t.Fatalf("the cl100k_base encoder did not load from the offline ranks: %v", err)
	}
	for _, tc := range []struct {
		text string
		want int
	}{
		{text: "", want: 0},
		{text: "hello world", want: 2},
		{text: "tiktoken is great!", want: 6},
		{text: "hello" + strings.Repeat(" hello", 99), want: 100},
		// a special token in user text is text, not a control token, and does not panic
		{text: "<|endoftext|>", want: 7},
	} {
		t.Run("", func(t *testing.T) {
			if got := llm.CountTokens(tc.text); got != tc.want {
				t.Errorf("CountTokens(%q) = %d, want %d (the fallback estimate is %d)",
					tc.text, got, tc.want, len(tc.text)/3+1)
			}
		})
	}
}

// The encoder's merge is quadratic in the length of a run of one kind of character;
// CountTokens cuts long runs so that a page with 50 kB of padding costs about what 50 kB
// of prose does. The ratio to prose measured in the same run is about 3 with the cuts
// and over 50 without.
func TestCountTokensLongRuns(t *testing.T) {
	const size = 50_000
	timeOf := func(text string) (time.Duration, int) {
		start := time.Now()
		n := llm.CountTokens(text)
		return time.Since(start), n
	}
	if err := llm.LoadTokenizer(); err != nil {
		t.Fatal(err)
	}
	prose, _ := timeOf(strings.Repeat("Our audits check forms, contrast and alt texts. ", size/49))
	for _, tc := range []struct {
		text      string
		wantCount int // 0: any
	}{
		{text: strings.Repeat("a", size), wantCount: size / 8},
		{text: strings.Repeat(" ", size)},
		{text: strings.Repeat("\n", size)},
		{text: strings.Repeat("=", size)},
		{text: strings.Repeat("ü", size/2), wantCount: size / 2},
		{text: strings.Repeat("7", size), wantCount: (size + 2) / 3},
		// punctuation and combining marks alternating: one piece of "other" to the
		// tokenizer, which took 40 times as long as prose before the marks were classed
		// as the tokenizer classes them
		{text: strings.Repeat(".\u0301", size/3)},
		{text: strings.Repeat("!\u0301?", size/4)},
	} {
		t.Run("", func(t *testing.T) {
			d, n := timeOf(tc.text)
			if ratio := float64(d) / float64(prose); ratio > 15 {
				t.Errorf("%q...: %s, %.0f times as long as prose of the same size (%s)", tc.text[:4], d, ratio, prose)
			}
			if n <= 0 || tc.wantCount != 0 && n != tc.wantCount {
				t.Errorf("%q...: %d tokens, want %d", tc.text[:4], n, tc.wantCount)
			}
		})
	}
}

// Prose longer than the parts CountTokens encodes at once is counted exactly: it is cut
// only where a space follows a word, which no piece of the tokenizer spans.
func TestCountTokensLongProseIsExact(t *testing.T) {
	if err := llm.LoadTokenizer(); err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("The quick brown fox jumps over the lazy dog near the river bank. ", 500)[:32000]
	if got := llm.CountTokens(text); got != 6893 {
		t.Fatalf("CountTokens = %d, want 6893 (cl100k_base of the whole text at once)", got)
	}
}
