package llm_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/sitetools/sitetools/internal/llm"
)

// oracle is tiktoken-go's cl100k_base, the reference implementation CountTokens must
// agree with.
func oracle(t *testing.T) *tiktoken.Tiktoken {
	t.Helper()
	tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
	enc, err := tiktoken.GetEncoding(tiktoken.MODEL_CL100K_BASE)
	if err != nil {
		t.Fatal(err)
	}
	return enc
}

// TestCountTokensAgreesWithTiktoken: on the demo site's pages, on text of every kind of
// character the pattern tells apart, and on random mixtures of them, CountTokens gives
// exactly tiktoken's count (no piece there is longer than the parts it merges in).
func TestCountTokensAgreesWithTiktoken(t *testing.T) {
	enc := oracle(t)
	check := func(name, text string) {
		t.Helper()
		if want, got := len(enc.EncodeOrdinary(text)), llm.CountTokens(text); got != want {
			t.Errorf("%s: CountTokens = %d, tiktoken %d (%.60q…)", name, got, want, text)
		}
	}
	pages, err := filepath.Glob(filepath.Join("..", "..", "deploy", "demo", "site", "*", "*.md"))
	if err != nil || len(pages) < 10 {
		t.Fatalf("demo pages: %v (%d)", err, len(pages))
	}
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		check(p, string(b))
	}
	for name, text := range map[string]string{
		"contractions":       "I'm sure they'll say we've done it, it's theirs and you'd agree; 'S 'T 'RE 'VE 'M 'LL 'D 'x",
		"german":             "Größenordnung: Die Straße hieß „Am Fluß“ – Öffnungszeiten Mo–Fr 9–17 Uhr, Tel. +49 30 1234567.",
		"code":               "func main() {\n\tif x := f(1, 2); x != nil {\n\t\treturn x[0]++ // done\n\t}\n}\r\n\r\n  \n",
		"whitespace":         "a  b   c\t\td \n\n  e\r\n \t f\u00a0g\u3000h \u2028 i  ",
		"numbers":            "1 12 123 1234 12345 ١٢٣٤ ½ ² Ⅻ 3.14159 1,000,000",
		"marks":              "e\u0301 .\u0301 a\u0301b !\u0301? \u0301\u0301x",
		"scripts":            "Привет мир, こんにちは世界, مرحبا بالعالم, שלום עולם, नमस्ते दुनिया, 안녕하세요",
		"symbols":            "€100 → ≈ ± ✓ 😀👍🏽 ©®™ «quote» ‹x› ¿qué? ¡sí!",
		"trailing spaces":    "end   ",
		"only newlines":      "\n\n\n",
		"space before punct": "a ... b ,, c !? d",
	} {
		check(name, text)
	}
	// Random mixtures of one-character units of each class, in runs short enough to
	// be merged whole.
	units := []string{"a", "Z", "é", "ß", "ж", "漢", "7", "٣", " ", "  ", "\t", "\n", "\r\n", "\u00a0", ".", ",", "'", "'s", "'ll", "!", "€", "😀", "\u0301", "-", "_", "/", "\"", "x1"}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		var b strings.Builder
		for range 1 + rng.IntN(40) {
			b.WriteString(units[rng.IntN(len(units))])
		}
		check("random "+strconv.Itoa(i), b.String())
	}
}

// FuzzCountTokens: on any valid UTF-8 text of up to 64 bytes (no piece longer than the
// parts CountTokens merges), the count is tiktoken's; on any other input it ends, with
// no more tokens than bytes.
func FuzzCountTokens(f *testing.F) {
	for _, seed := range []string{"hello world", "I'll", ".\u0301.\u0301", "a\u0301b", "  \n\t x", "1234567", "😀👍🏽", "\u00a0\u3000", "'S'", "a\x00b", strings.Repeat("\x80", 200)} {
		f.Add(seed)
	}
	tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
	enc, err := tiktoken.GetEncoding(tiktoken.MODEL_CL100K_BASE)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 64 || !utf8.ValidString(text) {
			// Any bytes at all: an answer, and never more tokens than bytes.
			if n := llm.CountTokens(text); n < 0 || n > len(text) {
				t.Errorf("CountTokens(%q) = %d for %d bytes", text, n, len(text))
			}
			return
		}
		if want, got := len(enc.EncodeOrdinary(text)), llm.CountTokens(text); got != want {
			t.Errorf("CountTokens(%q) = %d, tiktoken %d", text, got, want)
		}
	})
}
