package content

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestParseMarkdownConcurrently: the converters every page shares give each page its
// own headings and ids, whatever runs beside it (run with -race).
func TestParseMarkdownConcurrently(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				src := fmt.Sprintf("---\ntitle: Page %d-%d\n---\n\n# Page %d-%d\n\nIntro.\n\n## Part *%d*\n\nText %d.\n\n## Part *%d*\n\nMore.\n", g, i, g, i, i, i, i)
				doc, err := ParseMarkdown([]byte(src), fmt.Sprintf("https://example.com/%d/%d", g, i))
				if err != nil {
					t.Error(err)
					return
				}
				want := fmt.Sprintf("part-%d", i)
				if len(doc.Sections) != 3 || doc.Sections[1].Anchor != want || doc.Sections[2].Anchor != want+"-1" ||
					doc.Sections[1].Heading != fmt.Sprintf("Part %d", i) || doc.Title != fmt.Sprintf("Page %d-%d", g, i) {
					t.Errorf("page %d-%d: %+v", g, i, doc)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestWalkDirParsesAheadInOrder: with pages parsed ahead on several goroutines, fn still
// sees them one at a time in order of their paths, and a page that fails to parse stops
// the walk right there.
func TestWalkDirParsesAheadInOrder(t *testing.T) {
	dir := t.TempDir()
	for i := range 40 {
		src := fmt.Sprintf("---\ntitle: Page %02d\n---\n\nText of page %d.\n", i, i)
		if i == 25 {
			src = "---\ntitle: [unclosed\n---\n\nText.\n"
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("p%02d.md", i)), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	err := WalkDir(dir, "https://example.com", func(d *Document) error {
		got = append(got, d.Title)
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "p25.md") && !strings.Contains(err.Error(), "front matter") {
		t.Errorf("error %v, want the one of p25.md", err)
	}
	if len(got) != 25 {
		t.Fatalf("fn saw %d pages before the broken one, want 25: %q", len(got), got)
	}
	for i, title := range got {
		if want := fmt.Sprintf("Page %02d", i); title != want {
			t.Fatalf("page %d is %q, want %q", i, title, want)
		}
	}
}

// TestPlainHeadingsNeedNoRendering: a heading taken for plain text has the text that
// rendering it gives; others are rendered.
func TestPlainHeadingsNeedNoRendering(t *testing.T) {
	plain := []string{"Pricing", "What we do", "Über uns", "Q&A", "2. Prices", "Costs (2025), per hour: 95 €", "Who's \"in\"?",
		"Data 50/50 - 100%", "Part *5*", "A [link](/x)", "`code`", "x < y", "- item", "# Title", "> quote", "Tab\there",
		"Two  spaces", "Émile's café", "a_b", "a~b", "C++", "Trailing. ", "Line\nbreak", "AT&amp;T", "Ends with \\"}
	for _, s := range plain {
		rendered := extractRenderedText([]byte(s))
		if extractPlainInline([]byte(s)) {
			if got := extractInlineText([]byte(s)); got != rendered {
				t.Errorf("%q taken for plain text: %q, rendered %q", s, got, rendered)
			}
		} else if got := extractInlineText([]byte(s)); got != rendered {
			t.Errorf("%q: %q, want the rendered %q", s, got, rendered)
		}
	}
	// Lines of the characters plain text may hold, at random.
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune("aZü9 ,.:;?'\"()/%-é€")
	for range 3000 {
		r := make([]rune, 1+rng.IntN(12))
		for i := range r {
			r[i] = alphabet[rng.IntN(len(alphabet))]
		}
		line := []byte(string(r))
		if extractPlainInline(line) {
			if got, want := extractInlineText(line), extractRenderedText(line); got != want {
				t.Fatalf("%q taken for plain text: %q, rendered %q", line, got, want)
			}
		}
	}
	for _, s := range []string{"Pricing", "What we do", "Über uns", "Costs (2025), per hour: 95 €", "Data 50/50 - 100%"} {
		if !extractPlainInline([]byte(s)) {
			t.Errorf("%q is plain text", s)
		}
	}
}
