package llm_test

import (
	"strings"
	"testing"

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

// Long runs of one kind of character are merged in parts of 64 bytes (the merge is
// quadratic in a piece's length), which keeps the count of the runs below exact or
// close. How long they take, against prose of the same size, is measured by `make
// bench` ("token estimate").
func TestCountTokensLongRuns(t *testing.T) {
	const size = 50_000
	if err := llm.LoadTokenizer(); err != nil {
		t.Fatal(err)
	}
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
		// tokenizer
		{text: strings.Repeat(".\u0301", size/3)},
		{text: strings.Repeat("!\u0301?", size/4)},
		// not UTF-8: continuation bytes only, and bytes that start no character
		{text: strings.Repeat("\x80", size)},
		{text: strings.Repeat("\xff\xfe", size/2)},
	} {
		t.Run("", func(t *testing.T) {
			if n := llm.CountTokens(tc.text); n <= 0 || tc.wantCount != 0 && n != tc.wantCount {
				t.Errorf("%q...: %d tokens, want %d", tc.text[:4], n, tc.wantCount)
			}
		})
	}
}

// Long prose is counted exactly, as tiktoken counts the whole text at once.
func TestCountTokensLongProseIsExact(t *testing.T) {
	if err := llm.LoadTokenizer(); err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("The quick brown fox jumps over the lazy dog near the river bank. ", 500)[:32000]
	if got := llm.CountTokens(text); got != 6893 {
		t.Fatalf("CountTokens = %d, want 6893 (cl100k_base of the whole text at once)", got)
	}
}
