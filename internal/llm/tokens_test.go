package llm

import (
	"strings"
	"testing"
)

// The counts are cl100k_base's, as OpenAI's tokenizer gives them. The estimate that
// CountTokens falls back to would give different ones, so passing proves that the
// encoder loaded, from the embedded ranks: this machine has no route to their URL.
func TestCountTokens(t *testing.T) {
	if encoding() == nil {
		t.Fatal("the cl100k_base encoder did not load from the offline ranks")
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
			if got := CountTokens(tc.text); got != tc.want {
				t.Errorf("CountTokens(%q) = %d, want %d (the fallback estimate is %d)",
					tc.text, got, tc.want, len(tc.text)/3+1)
			}
		})
	}
}
