package content

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// chunkTestWords returns n distinct words "w<from>"… so that word-level
// comparisons are unambiguous.
func chunkTestWords(from, n int) []string {
	w := make([]string, n)
	for i := range w {
		w[i] = fmt.Sprintf("w%d", from+i)
	}
	return w
}

// chunkTestSentence is n distinct words and a full stop.
func chunkTestSentence(from, n int) string {
	return strings.Join(chunkTestWords(from, n), " ") + "."
}

// chunkTestLongDoc has a short section, a heading-only section and a long
// section of paragraphs of varying length, some of them over 300 tokens.
func chunkTestLongDoc() *Document {
	rng := rand.New(rand.NewSource(7))
	var paras []string
	next := 0
	for range 60 {
		var sents []string
		for range 1 + rng.Intn(6) {
			n := 4 + rng.Intn(25)
			sents = append(sents, chunkTestSentence(next, n))
			next += n
		}
		paras = append(paras, strings.Join(sents, " "))
	}
	// A paragraph of one 400-word sentence, for the word-level split.
	paras = append(paras, chunkTestSentence(next, 400))
	return &Document{Title: "Long", Sections: []Section{
		{Text: "Intro paragraph before any heading."},
		{Heading: "Empty", Anchor: "empty", Level: 2},
		{Heading: "Long", Anchor: "long", Level: 2, Text: strings.Join(paras, "\n\n")},
	}}
}

func chunkTestDemoDocs(t *testing.T) []*Document {
	t.Helper()
	var docs []*Document
	if err := WalkDir("../../deploy/demo/site", "https://example.com", func(d *Document) error {
		docs = append(docs, d)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return docs
}

func TestChunkDocumentInvariants(t *testing.T) {
	docs := append(chunkTestDemoDocs(t), chunkTestLongDoc())
	charCount := func(s string) int { return (utf8.RuneCountInString(s) + 3) / 4 }
	for _, tc := range []struct {
		name        string
		opts        ChunkOptions
		count       func(string) int // the counter the options imply
		overlap     int              // the overlap the options imply
		wantOverlap bool             // whether every pair of chunks in a section overlaps
	}{
		{name: "defaults", opts: ChunkOptions{}, count: chunkEstimateTokens, overlap: 40, wantOverlap: true},
		{name: "small chunks", opts: ChunkOptions{MaxTokens: 60, OverlapTokens: 12}, count: chunkEstimateTokens, overlap: 12, wantOverlap: true},
		{name: "no overlap", opts: ChunkOptions{MaxTokens: 80, OverlapTokens: -1}, count: chunkEstimateTokens, overlap: 0},
		{name: "character counter", opts: ChunkOptions{MaxTokens: 100, OverlapTokens: 20, Count: charCount}, count: charCount, overlap: 20, wantOverlap: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			max := tc.opts.MaxTokens
			if max == 0 {
				max = 300
			}
			total := 0
			for _, doc := range docs {
				chunks := ChunkDocument(doc, tc.opts)
				total += len(chunks)
				for i, c := range chunks {
					if c.Ord != i {
						t.Fatalf("%s: chunk %d has Ord %d", doc.Path, i, c.Ord)
					}
					if n := tc.count(c.Text); n > max {
						t.Errorf("%s chunk %d: %d tokens, over %d", doc.Path, i, n, max)
					}
					if c.Text == "" || strings.TrimSpace(c.Text) != c.Text {
						t.Errorf("%s chunk %d: text %q is empty or not trimmed", doc.Path, i, c.Text)
					}
					sum := sha256.Sum256([]byte(c.Heading + "\n" + c.Text))
					if c.Hash != hex.EncodeToString(sum[:]) {
						t.Errorf("%s chunk %d: hash %s is not SHA-256 of heading and text", doc.Path, i, c.Hash)
					}
				}
				// Walk sections and their chunks together: the chunks of a
				// section rebuild its words exactly, overlaps removed.
				rest := chunks
				for _, s := range doc.Sections {
					if s.Text == "" {
						continue
					}
					want := strings.Fields(s.Text)
					var got []string
					for len(rest) > 0 && len(got) < len(want) {
						c := rest[0]
						rest = rest[1:]
						if c.Heading != s.Heading || c.Anchor != s.Anchor {
							t.Fatalf("%s: chunk %d has heading %q #%s inside section %q #%s", doc.Path, c.Ord, c.Heading, c.Anchor, s.Heading, s.Anchor)
						}
						words := strings.Fields(c.Text)
						k := 0
						if len(got) > 0 {
							k = chunkTestOverlap(got, words)
							// Only a chunk too full for half the overlap may go without.
							if tc.wantOverlap && k == 0 && tc.count(c.Text)+tc.overlap/2 <= max {
								t.Errorf("%s chunk %d: no overlap with the chunk before it", doc.Path, c.Ord)
							}
							if k > 0 && tc.count(strings.Join(words[:k], " ")) > tc.overlap+1 {
								t.Errorf("%s chunk %d: overlap of %d words is over %d tokens", doc.Path, c.Ord, k, tc.overlap)
							}
						}
						got = append(got, words[k:]...)
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Fatalf("%s section %q: chunks do not rebuild its words (-want +got):\n%s", doc.Path, s.Heading, diff)
					}
				}
				if len(rest) > 0 {
					t.Errorf("%s: %d chunks beyond the sections", doc.Path, len(rest))
				}
			}
			if total <= len(docs) {
				t.Errorf("%d chunks for %d documents: nothing was split", total, len(docs))
			}
		})
	}
}

// chunkTestTouches reports whether a chunk's words include the place between
// the words a and b that an edit changed: a followed by b, or a chunk that
// ends with a or starts with b.
func chunkTestTouches(words []string, a, b string) bool {
	if len(words) > 0 && (words[0] == b || words[len(words)-1] == a) {
		return true
	}
	for i := 1; i < len(words); i++ {
		if words[i-1] == a && words[i] == b {
			return true
		}
	}
	return false
}

// chunkTestOverlap returns the largest k such that the last k words of prev
// are the first k of next.
func chunkTestOverlap(prev, next []string) int {
	for k := min(len(prev), len(next)); k > 0; k-- {
		if slices.Equal(prev[len(prev)-k:], next[:k]) {
			return k
		}
	}
	return 0
}

func TestChunkDocumentSplits(t *testing.T) {
	s := func(from, n int) string { return chunkTestSentence(from, n) }
	words := func(from, n int) string { return strings.Join(chunkTestWords(from, n), " ") }
	charCount := func(s string) int { return (utf8.RuneCountInString(s) + 3) / 4 }
	for _, tc := range []struct {
		name     string
		sections []Section
		opts     ChunkOptions
		want     []string // chunk texts
	}{
		{
			name:     "a short section is one chunk; empty sections none",
			sections: []Section{{Heading: "A", Text: "One.\n\nTwo."}, {Heading: "B"}, {Heading: "C", Text: "Three."}},
			want:     []string{"One.\n\nTwo.", "Three."},
		},
		{
			name:     "never across sections, however small",
			sections: []Section{{Text: "a."}, {Heading: "H", Text: "b."}},
			opts:     ChunkOptions{MaxTokens: 1000},
			want:     []string{"a.", "b."},
		},
		{
			// 6 words are 8 tokens: two paragraphs fit in 20, three do not.
			name:     "paragraphs packed whole, overlapping by a whole sentence",
			sections: []Section{{Text: s(0, 6) + "\n\n" + s(10, 6) + "\n\n" + s(20, 6)}},
			opts:     ChunkOptions{MaxTokens: 20},
			want:     []string{s(0, 6) + "\n\n" + s(10, 6), s(10, 6) + "\n\n" + s(20, 6)},
		},
		{
			name:     "a long paragraph split between sentences",
			sections: []Section{{Text: s(0, 6) + " " + s(10, 6) + " " + s(20, 6) + " " + s(30, 6)}},
			opts:     ChunkOptions{MaxTokens: 20, OverlapTokens: -1},
			want:     []string{s(0, 6) + " " + s(10, 6), s(20, 6) + " " + s(30, 6)},
		},
		{
			name:     "sentence overlap within a long paragraph",
			sections: []Section{{Text: s(0, 6) + " " + s(10, 6) + " " + s(20, 6) + " " + s(30, 6)}},
			opts:     ChunkOptions{MaxTokens: 20, OverlapTokens: 8},
			want:     []string{s(0, 6) + " " + s(10, 6), s(10, 6) + " " + s(20, 6), s(20, 6) + " " + s(30, 6)},
		},
		{
			// Windows leave room for the overlap: 12 words (16 tokens) + 3 words (4 tokens).
			name:     "a long sentence split between words",
			sections: []Section{{Text: words(0, 30)}},
			opts:     ChunkOptions{MaxTokens: 20, OverlapTokens: 4},
			want:     []string{words(0, 12), words(9, 15), words(21, 9)},
		},
		{
			name:     "a giant word split between characters",
			sections: []Section{{Text: strings.Repeat("x", 100)}},
			opts:     ChunkOptions{MaxTokens: 10, OverlapTokens: -1, Count: charCount},
			want:     []string{strings.Repeat("x", 40), strings.Repeat("x", 40), strings.Repeat("x", 20)},
		},
		{
			name:     "code lines keep their indentation",
			sections: []Section{{Text: "func f() {\n\treturn\n}"}},
			want:     []string{"func f() {\n\treturn\n}"},
		},
		{
			name:     "closing quotes stay with their sentence",
			sections: []Section{{Text: `He said "stop." Then ` + words(0, 14) + `. And "go!" ` + words(20, 2)}},
			opts:     ChunkOptions{MaxTokens: 24, OverlapTokens: -1},
			want:     []string{`He said "stop." Then ` + words(0, 14) + `.`, `And "go!" ` + words(20, 2)},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chunks := ChunkDocument(&Document{Sections: tc.sections}, tc.opts)
			var got []string
			for _, c := range chunks {
				got = append(got, c.Text)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("chunks (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChunkHashesDeterministic(t *testing.T) {
	for _, tc := range []struct {
		name string
		docs func(t *testing.T) []*Document
	}{
		{name: "demo site parsed twice", docs: chunkTestDemoDocs},
		{name: "generated long document", docs: func(*testing.T) []*Document { return []*Document{chunkTestLongDoc()} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first, second := tc.docs(t), tc.docs(t)
			for i := range first {
				a, b := ChunkDocument(first[i], ChunkOptions{}), ChunkDocument(second[i], ChunkOptions{})
				if diff := cmp.Diff(a, b); diff != "" {
					t.Errorf("%s: chunks differ between runs (-first +second):\n%s", first[i].Path, diff)
				}
				if DocumentHash(first[i]) != DocumentHash(second[i]) {
					t.Errorf("%s: document hash differs between runs", first[i].Path)
				}
			}
		})
	}
}

// TestChunkHashGolden pins hashes across processes and releases: a change
// here re-embeds every site on its next ingest, so it must be deliberate.
func TestChunkHashGolden(t *testing.T) {
	doc := &Document{Title: "T", Lang: "en", Sections: []Section{
		{Text: "Intro."},
		{Heading: "Prices", Anchor: "prices", Level: 2, Text: "One day costs 1,200 euros.\n\nTravel is extra."},
	}}
	var got []string
	for _, c := range ChunkDocument(doc, ChunkOptions{}) {
		got = append(got, c.Hash)
	}
	want := []string{
		"3ca13f8fb24f75eb7b44991765d00185dfe7ef64134cd3084da1caa385f2c904",
		"45c58bc776c0e73c4f4251e62f2c369fe0b363c6e36fefd85e5ace627269f09a",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("chunk hashes (-want +got):\n%s", diff)
	}
	if got, want := DocumentHash(doc), "0d1daebd5dd4772fa645c2ce4d9790427c90b97325ab5b3956383b7b1481e09d"; got != want {
		t.Errorf("DocumentHash = %s, want %s", got, want)
	}
	// The boundaries of a long section, pinned as one hash over all chunk hashes.
	all := sha256.New()
	for _, c := range ChunkDocument(chunkTestLongDoc(), ChunkOptions{}) {
		all.Write([]byte(c.Hash))
	}
	if got, want := hex.EncodeToString(all.Sum(nil)), "a73f8ee3655585e367ee981ea3ec83b3e606e9480ce2d6858e1eee44df7d7712"; got != want {
		t.Errorf("long document's chunk hashes hash to %s, want %s", got, want)
	}
}

func TestChunkEditLocality(t *testing.T) {
	const marker = "Zedited"
	// Each edit changes the paragraph at word m: it replaces the word,
	// inserts six before it or deletes up to six from it.
	edits := []struct {
		name string
		edit func(w []string, m int) []string
	}{
		{"replace a word", func(w []string, m int) []string {
			return slices.Concat(w[:m], []string{marker}, w[m+1:])
		}},
		{"insert six words", func(w []string, m int) []string {
			return slices.Concat(w[:m], []string{marker, "with", "several", "added", "words", "here"}, w[m:])
		}},
		{"delete six words", func(w []string, m int) []string {
			return slices.Concat(w[:m], []string{marker}, w[min(len(w), m+6):])
		}},
	}
	for _, tc := range []struct {
		name  string
		docs  func(t *testing.T) []*Document
		edits []int // indexes into edits that must stay local
		skip  int   // leave the first words alone (cut points read them)
	}{
		// Every paragraph of every demo page, three ways each.
		{name: "demo site", docs: chunkTestDemoDocs, edits: []int{0, 1, 2}},
		// In a section of many chunks, an edit that keeps the token count
		// keeps every cut; one that changes it may move a cut, tested below.
		{name: "long section, same length", docs: func(*testing.T) []*Document { return []*Document{chunkTestLongDoc()} }, edits: []int{0}, skip: 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			for _, doc := range tc.docs(t) {
				before := ChunkDocument(doc, ChunkOptions{})
				oldHashes := map[string]bool{}
				for _, c := range before {
					oldHashes[c.Hash] = true
				}
				for si, sec := range doc.Sections {
					paras := strings.Split(sec.Text, "\n\n")
					for pi, p := range paras {
						w := strings.Fields(p)
						m := max(len(w)/2, tc.skip)
						if m >= len(w) || m == 0 {
							continue
						}
						for _, ei := range tc.edits {
							edited := *doc
							edited.Sections = slices.Clone(doc.Sections)
							newParas := slices.Clone(paras)
							newParas[pi] = strings.Join(edits[ei].edit(slices.Clone(w), m), " ")
							edited.Sections[si].Text = strings.Join(newParas, "\n\n")
							after := ChunkDocument(&edited, ChunkOptions{})
							n++
							newHashes := map[string]bool{}
							for _, c := range after {
								newHashes[c.Hash] = true
								if !oldHashes[c.Hash] && !strings.Contains(c.Text, marker) {
									t.Errorf("%s, %s in section %q paragraph %d: new chunk %d does not contain the edit:\n%s",
										doc.Path, edits[ei].name, sec.Heading, pi, c.Ord, c.Text)
								}
							}
							for _, c := range before {
								if !newHashes[c.Hash] && !chunkTestTouches(strings.Fields(c.Text), w[m-1], w[m]) {
									t.Errorf("%s, %s in section %q paragraph %d: chunk %d changed but did not contain the edited place:\n%s",
										doc.Path, edits[ei].name, sec.Heading, pi, c.Ord, c.Text)
								}
							}
						}
					}
				}
			}
			if n < 10 {
				t.Fatalf("only %d edits tried", n)
			}
		})
	}
}

// TestChunkEditLength checks what content-defined cuts promise in a long
// section when an edit changes a paragraph's length: chunks before the edit
// and in other sections keep their hashes, and after the edit the chunks
// realign, so most of the section keeps its hashes.
func TestChunkEditLength(t *testing.T) {
	doc := chunkTestLongDoc()
	before := ChunkDocument(doc, ChunkOptions{})
	long := doc.Sections[2]
	paras := strings.Split(long.Text, "\n\n")
	for _, tc := range []struct {
		name   string
		para   int
		change func(string) string
	}{
		{name: "grow an early paragraph", para: 3, change: func(p string) string { return p + " Zedited " + chunkTestSentence(100000, 40) }},
		{name: "shrink a middle paragraph", para: 30, change: func(p string) string { return "Zedited " + strings.Join(strings.Fields(p)[:3], " ") }},
		{name: "grow a late paragraph", para: 55, change: func(p string) string { return p + " Zedited " + chunkTestSentence(200000, 25) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			edited := *doc
			edited.Sections = slices.Clone(doc.Sections)
			newParas := slices.Clone(paras)
			newParas[tc.para] = tc.change(paras[tc.para])
			edited.Sections[2].Text = strings.Join(newParas, "\n\n")
			after := ChunkDocument(&edited, ChunkOptions{})

			newHashes := map[string]bool{}
			for _, c := range after {
				newHashes[c.Hash] = true
			}
			// Chunks before the first that held the paragraph are untouched.
			first := strings.Fields(paras[tc.para])[0]
			for _, c := range before {
				if slices.Contains(strings.Fields(c.Text), first) {
					break
				}
				if !newHashes[c.Hash] {
					t.Errorf("chunk %d before the edit changed", c.Ord)
				}
			}
			kept := 0
			for _, c := range before {
				if newHashes[c.Hash] {
					kept++
				}
			}
			if changed := len(before) - kept; changed > 4 {
				t.Errorf("%d of %d chunks changed, want the edit's neighbourhood only", changed, len(before))
			}
			if last := before[len(before)-1]; !newHashes[last.Hash] {
				t.Errorf("the section's last chunk changed: chunks did not realign after the edit")
			}
		})
	}
}

func TestDocumentHash(t *testing.T) {
	base := func() *Document {
		return &Document{URL: "https://example.com/a", Path: "/a", Title: "A", Lang: "en", Sections: []Section{
			{Text: "Intro."},
			{Heading: "H", Anchor: "h", Level: 2, Text: "Body."},
		}}
	}
	for _, tc := range []struct {
		name     string
		change   func(d *Document)
		wantSame bool
	}{
		{name: "unchanged copy", change: func(*Document) {}, wantSame: true},
		{name: "URL and path are not content", change: func(d *Document) { d.URL, d.Path = "https://example.org/b", "/b" }, wantSame: true},
		{name: "title", change: func(d *Document) { d.Title = "B" }},
		{name: "language", change: func(d *Document) { d.Lang = "de" }},
		{name: "heading", change: func(d *Document) { d.Sections[1].Heading = "H2" }},
		{name: "anchor", change: func(d *Document) { d.Sections[1].Anchor = "h2" }},
		{name: "level", change: func(d *Document) { d.Sections[1].Level = 3 }},
		{name: "text", change: func(d *Document) { d.Sections[1].Text = "Body!" }},
		{name: "text moved between fields", change: func(d *Document) { d.Sections[0].Text, d.Sections[1].Heading = "Intro.H", "" }},
		{name: "an empty section added", change: func(d *Document) { d.Sections = append(d.Sections, Section{}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := base()
			tc.change(d)
			if same := DocumentHash(d) == DocumentHash(base()); same != tc.wantSame {
				t.Errorf("same hash = %v, want %v", same, tc.wantSame)
			}
		})
	}
}
