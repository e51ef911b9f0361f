package content

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Chunk is a piece of one section of a page, small enough to embed.
type Chunk struct {
	Ord     int // position in the document, from 0
	Heading string
	Anchor  string
	Text    string
	Hash    string // hex SHA-256 of Heading + "\n" + Text
}

// ChunkOptions tunes ChunkDocument; the zero value means the defaults.
type ChunkOptions struct {
	MaxTokens     int              // upper bound on Count(chunk.Text); default 300
	OverlapTokens int              // tokens repeated from the previous chunk of a section; default 40, negative for none
	Count         func(string) int // token counter; default about 4/3 tokens per word
}

const (
	chunkDefaultMax     = 300
	chunkDefaultOverlap = 40
)

// ChunkDocument splits each section of doc into chunks of at most MaxTokens
// tokens of text. A chunk never spans two sections. It splits between
// paragraphs where it can, between sentences when a paragraph alone is too
// long, and between words (or, for a single giant word, characters) as a last
// resort. Consecutive chunks of a section share about OverlapTokens tokens,
// in whole sentences where they fit.
//
// The result depends only on the content, so unchanged content keeps its
// hashes across runs, and an edit changes the hashes of the chunks that
// contain it and, at most, of a few after it in the same section. Greedy
// packing alone would let one longer paragraph push every later paragraph of
// a long section into the next chunk; so, where the rest of a section does
// not fit, a chunk that is at least half full also ends before a paragraph
// whose first words hash to a cut point (about half of all paragraphs). Such
// cuts fall in the same places whatever precedes them, and realign the
// chunks after an edit.
func ChunkDocument(doc *Document, opts ChunkOptions) []Chunk {
	c := chunker{max: opts.MaxTokens, overlap: opts.OverlapTokens, count: opts.Count}
	if c.max <= 0 {
		c.max = chunkDefaultMax
	}
	switch {
	case c.overlap == 0:
		c.overlap = chunkDefaultOverlap
	case c.overlap < 0:
		c.overlap = 0
	}
	c.overlap = min(c.overlap, c.max/2)
	if c.count == nil {
		c.count = chunkEstimateTokens
	}
	var out []Chunk
	for _, s := range doc.Sections {
		for _, text := range c.section(s.Text) {
			sum := sha256.Sum256([]byte(s.Heading + "\n" + text))
			out = append(out, Chunk{
				Ord:     len(out),
				Heading: s.Heading,
				Anchor:  s.Anchor,
				Text:    text,
				Hash:    hex.EncodeToString(sum[:]),
			})
		}
	}
	return out
}

// DocumentHash is a hex SHA-256 over a document's title, language and
// sections: equal for equal content, whatever the run.
func DocumentHash(doc *Document) string {
	h := sha256.New()
	field := func(s string) { fmt.Fprintf(h, "%d:%s;", len(s), s) }
	field(doc.Title)
	field(doc.Lang)
	for _, s := range doc.Sections {
		field(s.Heading)
		field(s.Anchor)
		field(fmt.Sprint(s.Level))
		field(s.Text)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// chunkEstimateTokens estimates tokens as 4/3 per word, rounded up.
func chunkEstimateTokens(s string) int {
	return (len(strings.Fields(s))*4 + 2) / 3
}

type chunker struct {
	max, overlap int
	count        func(string) int
}

// chunkAtom is a sentence, or a piece of one, in a paragraph.
type chunkAtom struct {
	text string
	para int    // index of its paragraph in the section
	sep  string // what separated it from the atom before it in the paragraph
}

// chunkUnit is what the packer places: a whole paragraph, or a piece of one
// that is too long on its own.
type chunkUnit struct {
	atoms     []chunkAtom
	startPara bool
	tokens    int
}

func chunkJoin(atoms []chunkAtom) string {
	var b strings.Builder
	for i, a := range atoms {
		switch {
		case i == 0:
		case a.para != atoms[i-1].para:
			b.WriteString("\n\n")
		default:
			b.WriteString(a.sep)
		}
		b.WriteString(a.text)
	}
	return b.String()
}

// section returns the chunk texts of one section.
func (c *chunker) section(text string) []string {
	units := c.units(text)
	var (
		out    []string
		cur    []chunkAtom // overlap prefix + new atoms
		curEst int         // estimated tokens of cur
		fresh  int         // index in cur where the new atoms start
		newTok int         // tokens of the new units in cur
	)
	// rest[i] is the token count of units[i:].
	rest := make([]int, len(units)+1)
	for i := len(units) - 1; i >= 0; i-- {
		rest[i] = rest[i+1] + units[i].tokens
	}
	for i, u := range units {
		if len(cur) > fresh {
			joined := func() string { return chunkJoin(append(cur[:len(cur):len(cur)], u.atoms...)) }
			cut := !c.fits(curEst+1+u.tokens, joined) ||
				(u.startPara && newTok >= c.max/2 && curEst+rest[i] > c.max && chunkCutPoint(u))
			if cut {
				out = append(out, strings.TrimSpace(chunkJoin(cur)))
				cur, curEst = c.overlapOf(cur[fresh:], u)
				fresh, newTok = len(cur), 0
			}
		}
		if len(cur) > 0 {
			curEst++ // the separator
		}
		cur = append(cur, u.atoms...)
		curEst += u.tokens
		newTok += u.tokens
	}
	if len(cur) > fresh {
		out = append(out, strings.TrimSpace(chunkJoin(cur)))
	}
	return out
}

// fits reports whether a text is within the limit, given an estimate of its
// tokens: the sum of its parts' counts plus one per separator. Only an
// estimate near or over the limit is checked by counting the whole text, so
// that a long section is not counted again for every paragraph added. This
// assumes that joining texts adds at most a few tokens to the sum of their
// counts, as with word estimates and BPE tokenisers.
func (c *chunker) fits(est int, text func() string) bool {
	if est <= c.max-max(2, c.max/16) {
		return true
	}
	return c.count(text()) <= c.max
}

// chunkCutPoint marks about half of all paragraphs as places where a chunk
// may end early. It looks at the first words only, so that editing the rest
// of a paragraph does not move the cuts around it.
func chunkCutPoint(u chunkUnit) bool {
	w := strings.Fields(chunkJoin(u.atoms))
	w = w[:min(len(w), 8)]
	sum := sha256.Sum256([]byte(strings.Join(w, " ")))
	return sum[0]&1 == 0
}

// overlapOf returns the atoms that begin the chunk after prev, and their
// tokens: prev's last sentences up to the overlap budget, leaving room for
// next; or, when even the last sentence is too long, its last words. Where
// next leaves room for less than half the overlap, there is none: a word or
// two of context would only make the chunk start oddly.
func (c *chunker) overlapOf(prev []chunkAtom, next chunkUnit) ([]chunkAtom, int) {
	budget := min(c.overlap, c.max-next.tokens)
	if budget <= 0 || budget*2 < c.overlap || len(prev) == 0 {
		return nil, 0
	}
	try := func(ov []chunkAtom) (int, bool) {
		n := c.count(chunkJoin(ov))
		return n, n <= budget && c.fits(n+1+next.tokens, func() string {
			return chunkJoin(append(ov[:len(ov):len(ov)], next.atoms...))
		})
	}
	start, tokens := len(prev), 0
	for start > 0 {
		n, ok := try(prev[start-1:])
		if !ok {
			break
		}
		start, tokens = start-1, n
	}
	if start < len(prev) {
		return slices.Clone(prev[start:]), tokens
	}
	last := prev[len(prev)-1]
	words := strings.Fields(last.text)
	tail := func(k int) []chunkAtom {
		return []chunkAtom{{text: strings.Join(words[len(words)-k:], " "), para: last.para, sep: " "}}
	}
	k := chunkLargest(len(words), func(k int) bool { _, ok := try(tail(k)); return ok })
	if k == 0 {
		return nil, 0
	}
	ov := tail(k)
	return ov, c.count(ov[0].text)
}

// units splits a section's text into paragraphs, and paragraphs over the
// limit into sentences, and sentences over the limit into runs of words.
func (c *chunker) units(text string) []chunkUnit {
	var units []chunkUnit
	para := 0
	for _, p := range strings.Split(text, "\n\n") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		atoms := chunkSentences(p, para)
		if n := c.count(p); n <= c.max {
			units = append(units, chunkUnit{atoms: atoms, startPara: true, tokens: n})
			para++
			continue
		}
		// Too long: pack its sentences, splitting any that are too long alone.
		first := true
		for _, a := range atoms {
			for _, piece := range c.splitAtom(a) {
				units = append(units, chunkUnit{atoms: []chunkAtom{piece}, startPara: first, tokens: c.count(piece.text)})
				first = false
			}
		}
		para++
	}
	return units
}

// splitAtom cuts a sentence over the limit into runs of words that leave
// room for the overlap.
func (c *chunker) splitAtom(a chunkAtom) []chunkAtom {
	if c.count(a.text) <= c.max {
		return []chunkAtom{a}
	}
	var out []chunkAtom
	words := strings.Fields(a.text)
	sep := a.sep
	limit := c.max - c.overlap
	for len(words) > 0 {
		k := chunkLargest(len(words), func(k int) bool {
			return c.count(strings.Join(words[:k], " ")) <= limit
		})
		if k == 0 {
			// One word longer than the limit: cut it by characters.
			for _, piece := range c.splitWord(words[0], limit) {
				out = append(out, chunkAtom{text: piece, para: a.para, sep: sep})
				sep = " "
			}
			words = words[1:]
			continue
		}
		out = append(out, chunkAtom{text: strings.Join(words[:k], " "), para: a.para, sep: sep})
		sep = " "
		words = words[k:]
	}
	return out
}

func (c *chunker) splitWord(w string, limit int) []string {
	var out []string
	runes := []rune(w)
	for len(runes) > 0 {
		k := chunkLargest(len(runes), func(k int) bool { return c.count(string(runes[:k])) <= limit })
		k = max(k, 1) // a counter that rates one character over the limit cannot be satisfied
		out = append(out, string(runes[:k]))
		runes = runes[k:]
	}
	return out
}

// chunkLargest returns the largest k in [0, n] with ok(k), assuming ok holds
// up to some k and not after it. It probes 1, 2, 4… before bisecting, so the
// cost depends on the answer, not on n.
func chunkLargest(n int, ok func(int) bool) int {
	lo, hi := 0, 1
	for hi <= n && ok(hi) {
		lo, hi = hi, hi*2
	}
	hi = min(hi, n+1) // ok(lo), and hi is past the end or not ok
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if ok(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// chunkSentences splits a paragraph after sentence-ending punctuation that is
// followed by a space, and at line breaks (code, addresses), whose
// indentation it keeps.
func chunkSentences(p string, para int) []chunkAtom {
	var out []chunkAtom
	sep, start := "", 0
	add := func(s, nextSep string) {
		if strings.TrimSpace(s) == "" {
			return
		}
		out = append(out, chunkAtom{text: strings.TrimRightFunc(s, unicode.IsSpace), para: para, sep: sep})
		sep = nextSep
	}
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRuneInString(p[i:])
		i += size
		switch {
		case r == '\n':
			add(p[start:i-size], "\n")
			start = i
		case strings.ContainsRune(".!?…", r):
			// Take closing quotes and brackets with the sentence.
			for i < len(p) {
				q, qs := utf8.DecodeRuneInString(p[i:])
				if !strings.ContainsRune(`"')]»”’`, q) {
					break
				}
				i += qs
			}
			ws := i
			for ws < len(p) {
				q, qs := utf8.DecodeRuneInString(p[ws:])
				if q == '\n' || !unicode.IsSpace(q) {
					break
				}
				ws += qs
			}
			if ws > i && ws < len(p) && p[ws] != '\n' {
				add(p[start:i], " ")
				start, i = ws, ws
			}
		}
	}
	add(p[start:], "")
	return out
}
