package llm

import (
	"fmt"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// encoding is cl100k_base, loaded once from the ranks embedded in the binary. The
// default loader of tiktoken-go downloads them at first use; the offline loader never
// touches the network.
var encoding = sync.OnceValues(loadEncoding)

func loadEncoding() (*tiktoken.Tiktoken, error) {
	tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
	return tiktoken.GetEncoding(tiktoken.MODEL_CL100K_BASE)
}

// LoadTokenizer loads the encoder now instead of at the first CountTokens (that takes
// tens of milliseconds and some 7 MB), and reports whether CountTokens will fall back to its
// estimate. Call it at start-up.
func LoadTokenizer() error {
	if _, err := encoding(); err != nil {
		return fmt.Errorf("llm.LoadTokenizer: %w", err)
	}
	return nil
}

// CountTokens returns the number of cl100k_base tokens in text: exact for OpenAI's
// embedding models, a close estimate for others. Special tokens such as <|endoftext|>
// count as ordinary text. Should the encoder fail to load, it returns an estimate of a
// token per three bytes, which errs high for most text, so that budgets err on the safe
// side.
func CountTokens(text string) int {
	if text == "" {
		return 0
	}
	enc, err := encoding()
	if err != nil {
		return len(text)/3 + 1
	}
	n, start, runStart, prev := 0, 0, 0, runeClass(-1)
	for i, r := range text {
		switch c := classOf(r); {
		case c != prev:
			// Where a space follows other text, no piece of the tokenizer spans the
			// boundary (a piece may begin with a space, never end with one before a
			// word): text is cut there, into parts of about maxPart bytes, without
			// changing the count.
			if c == classSpace && i-start >= maxPart {
				n += len(enc.EncodeOrdinary(text[start:i]))
				start = i
			}
			runStart, prev = i, c
		case i-runStart >= maxRun && c != classDigit: // digits come in pieces of three
			n += len(enc.EncodeOrdinary(text[start:i]))
			start, runStart = i, i
		}
	}
	return n + len(enc.EncodeOrdinary(text[start:]))
}

// maxPart bounds the text that reaches the encoder at once, where it can be cut exactly.
const maxPart = 4096

// maxRun bounds the runs of one class of characters that reach the encoder at once:
// its byte-pair merge takes time quadratic in a run's length (100 kB of "a" or of
// spaces takes seconds), and pages do hold such runs. A longer run is counted in parts,
// which may add a token per part; text with normal words is counted exactly.
const maxRun = 256

type runeClass int

const (
	classLetter runeClass = iota
	classDigit
	classSpace
	classOther
)

// classOf classifies r as the tokenizer's own pre-tokenizer pattern does: \p{L} letters,
// \p{N} numbers, whitespace, and everything else. Combining marks are not letters to it
// (a mark after punctuation extends a piece of "other", not a word), so they are not
// here either: a text alternating punctuation and marks is one long run of "other",
// which maxRun cuts.
func classOf(r rune) runeClass {
	switch {
	case r < utf8.RuneSelf:
		switch {
		case 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z':
			return classLetter
		case '0' <= r && r <= '9':
			return classDigit
		case r == ' ' || '\t' <= r && r <= '\r':
			return classSpace
		}
		return classOther
	case unicode.IsLetter(r):
		return classLetter
	case unicode.IsNumber(r):
		return classDigit
	case unicode.IsSpace(r):
		return classSpace
	}
	return classOther
}
