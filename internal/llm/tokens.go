package llm

import (
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// ranks is cl100k_base's byte-pair ranks, loaded once from the copy embedded in the
// binary: nothing is downloaded.
var ranks = sync.OnceValues(func() (*vocab, error) {
	r, err := tiktokenloader.NewOfflineLoader().LoadTiktokenBpe("cl100k_base.tiktoken")
	if err != nil {
		return nil, err
	}
	classTable()
	return newVocab(r), nil
})

// LoadTokenizer loads the ranks now instead of at the first CountTokens (that takes tens
// of milliseconds and some 10 MB), and reports whether CountTokens will fall back to its
// estimate. Call it at start-up.
func LoadTokenizer() error {
	if _, err := ranks(); err != nil {
		return fmt.Errorf("llm.LoadTokenizer: %w", err)
	}
	return nil
}

// CountTokens returns the number of cl100k_base tokens in text: exact for OpenAI's
// embedding models, a close estimate for others. Special tokens such as <|endoftext|>
// count as ordinary text. Should the ranks fail to load, it returns an estimate of a
// token per three bytes, which errs high for most text, so that budgets err on the safe
// side.
//
// It splits text into pieces as cl100k_base's pattern does (see nextPiece) and merges
// each piece's bytes by rank, so it takes time linear in the text: every piece found in
// the vocabulary is one lookup, and a piece longer than maxPiece bytes (a run of one
// kind of character, which pages do hold: padding, long numbers without separators) is
// merged in parts of at most that size, which may add a token per part. Text with
// normal words is counted exactly.
func CountTokens(text string) int {
	if text == "" {
		return 0
	}
	r, err := ranks()
	if err != nil {
		return len(text)/3 + 1
	}
	n := 0
	for rest := text; rest != ""; {
		piece := nextPiece(rest)
		rest = rest[len(piece):]
		if _, ok := r.rank(piece); ok {
			n++
			continue
		}
		for len(piece) > maxPiece {
			cut := maxPiece
			for cut > 0 && !utf8.RuneStart(piece[cut]) {
				cut--
			}
			if cut == 0 {
				cut = maxPiece // not UTF-8: any place will do
			}
			n += mergedCount(piece[:cut], r)
			piece = piece[cut:]
		}
		n += mergedCount(piece, r)
	}
	return n
}

// mergedCounts remembers the counts of recently merged pieces, by a hash of the piece: a
// site repeats its rare words (names, jargon, compounds), and merging them again is most
// of the time its pages take to count. A slot holds 48 bits of the hash and the count;
// no text is kept. Two pieces share a slot's hash once in 2⁴⁸ lookups, and then a
// count errs by a few tokens.
var (
	mergedCounts [1 << 14]atomic.Uint64
	mergedSeed   = maphash.MakeSeed()
)

// mergedCount is mergeCount(piece, v), remembered.
func mergedCount(piece string, v *vocab) int {
	h := maphash.String(mergedSeed, piece)
	slot := &mergedCounts[h%uint64(len(mergedCounts))]
	key := h &^ 0xffff
	if e := slot.Load(); e != 0 && e&^0xffff == key {
		return int(e & 0xffff)
	}
	n := mergeCount(piece, v)
	slot.Store(key | uint64(n&0xffff))
	return n
}

// maxPiece bounds the bytes merged at once: the merge takes time quadratic in a piece's
// length.
const maxPiece = 64

// mergeCount returns how many tokens the byte-pair merge of piece gives: the pair of
// adjacent parts whose joined bytes rank lowest is joined, until no pair is in the
// vocabulary. It is tiktoken's merge: each part keeps the rank of joining it with the
// next, so a merge looks up two pairs, not all of them.
func mergeCount(piece string, v *vocab) int {
	if len(piece) <= 1 {
		return len(piece)
	}
	if _, ok := v.rank(piece); ok {
		return 1
	}
	type part struct{ start, rank int }
	const none = int(^uint(0) >> 1)
	var buf [maxPiece + 1]part
	parts := buf[:0]
	for i := range len(piece) + 1 {
		parts = append(parts, part{i, none})
	}
	// rank is the rank of joining parts i to i+skip+1 into one.
	rank := func(i, skip int) int {
		if i+skip+2 < len(parts) {
			if r, ok := v.rank(piece[parts[i].start:parts[i+skip+2].start]); ok {
				return r
			}
		}
		return none
	}
	for i := 0; i+2 < len(parts); i++ {
		parts[i].rank = rank(i, 0)
	}
	for len(parts) > 2 {
		best, at := none, -1
		for i, p := range parts[:len(parts)-1] {
			if p.rank < best {
				best, at = p.rank, i
			}
		}
		if at < 0 {
			break
		}
		if at > 0 {
			parts[at-1].rank = rank(at-1, 1)
		}
		parts[at].rank = rank(at, 1)
		parts = append(parts[:at+1], parts[at+2:]...)
	}
	return len(parts) - 1
}

// nextPiece returns the first piece of text as cl100k_base's pattern splits it:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// The alternatives are tried in that order at the start of text, each as the pattern's
// backtracking engine would match it; text is not empty.
func nextPiece(text string) string {
	c, size := utf8.DecodeRuneInString(text)
	// 's 't 're 've 'm 'll 'd, in any case.
	if c == '\'' && len(text) > 1 {
		switch text[1] | 0x20 {
		case 's', 't', 'm', 'd':
			return text[:2]
		case 'r', 'v':
			if len(text) > 2 && text[2]|0x20 == 'e' {
				return text[:3]
			}
		case 'l':
			if len(text) > 2 && text[2]|0x20 == 'l' {
				return text[:3]
			}
		}
	}
	class := classOf(c)
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if class == classLetter {
		return text[:size+classRun(text[size:], classLetter)]
	}
	if class != classDigit && c != '\r' && c != '\n' {
		if l := classRun(text[size:], classLetter); l > 0 {
			return text[:size+l]
		}
	}
	// \p{N}{1,3}
	if class == classDigit {
		end := size
		for k := 1; k < 3 && end < len(text); k++ {
			r, s := utf8.DecodeRuneInString(text[end:])
			if classOf(r) != classDigit {
				break
			}
			end += s
		}
		return text[:end]
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
	start := 0
	if c == ' ' && len(text) > 1 {
		if r, _ := utf8.DecodeRuneInString(text[1:]); classOf(r) == classOther {
			start = 1
		}
	}
	if l := classRun(text[start:], classOther); l > 0 {
		end := start + l
		for end < len(text) && (text[end] == '\r' || text[end] == '\n') {
			end++
		}
		return text[:end]
	}
	// What is left starts with whitespace. \s*[\r\n]+ ends after the last line break of
	// the run of whitespace; without one, \s+(?!\S) leaves the run's last character to
	// the next piece when something follows it, and \s+ takes a single one.
	run := classRun(text, classSpace)
	for i := run - 1; i >= 0; i-- {
		if text[i] == '\r' || text[i] == '\n' {
			return text[:i+1]
		}
	}
	if run == len(text) {
		return text
	}
	_, last := utf8.DecodeLastRuneInString(text[:run])
	if run-last > 0 {
		return text[:run-last]
	}
	return text[:run]
}

// classRun returns the length in bytes of text's leading run of characters of class c.
func classRun(text string, c runeClass) int {
	for i, r := range text {
		if classOf(r) != c {
			return i
		}
	}
	return len(text)
}

type runeClass int

const (
	classLetter runeClass = iota
	classDigit
	classSpace
	classOther
)

// classOf classifies r as the pattern does: \p{L} letters, \p{N} numbers, \s
// whitespace, and everything else (combining marks among it: a mark after punctuation
// extends a piece of "other", not a word).
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
	case r < tableRunes:
		return runeClass(classTable()[r])
	}
	return unicodeClass(r)
}

// tableRunes is where classTable ends: the Basic Multilingual Plane and the two planes
// after it, where emoji and rare CJK live.
const tableRunes = 0x30000

// classTable holds the class of every rune below tableRunes, so that a text of emoji
// or CJK costs one read per character rather than three searches of Unicode's tables.
var classTable = sync.OnceValue(func() []uint8 {
	t := make([]uint8, tableRunes)
	for r := range rune(tableRunes) {
		t[r] = uint8(unicodeClass(r))
	}
	return t
})

func unicodeClass(r rune) runeClass {
	switch {
	case unicode.IsLetter(r):
		return classLetter
	case unicode.IsNumber(r):
		return classDigit
	case unicode.IsSpace(r):
		return classSpace
	}
	return classOther
}
