package llm

import (
	"context"
	"fmt"
	"hash"
	"hash/fnv"
	"math"
	"sync"
	"unicode"
	"unicode/utf8"
)

// LocalModel names the vectors of the local embedder. Any change to how Local computes
// a vector (tokens, features, weights, hashing) must change this name, so that an index
// built by the old algorithm is refused rather than silently mixed with the new one.
const LocalModel = "local-lexical-v1"

// The bounds of the local embedder's dimension. Fewer buckets collide too much to be
// useful; pgvector's HNSW index takes at most 2000 dimensions.
const (
	MinLocalDimensions = 16
	MaxLocalDimensions = 2000
)

// Feature weights. Whole words carry the meaning; word pairs add phrase matches
// ("privacy policy"); character trigrams let related forms meet ("accessible",
// "accessibility") at a fraction of a word's weight.
const (
	weightUnigram = 1.0
	weightBigram  = 0.4
	weightTrigram = 0.25
	// Longer runs of letters are identifiers, hashes or base64, not words: their trigrams
	// would only add noise and cost.
	maxTrigramWordRunes = 40
)

// Local is the built-in offline embedder: deterministic and lexical. Texts are split
// into lower-cased Unicode words (letters and digits); the features are the words that
// are not stop words, pairs of adjacent such words, and the character trigrams of each
// such word with boundary markers. Each feature is hashed with FNV-1a into one of the
// vector's buckets with a sign taken from the same hash, weighted by its sublinear term
// frequency (1+ln tf), and the vector is L2-normalised.
//
// A text made only of stop words ("wer sind wir") is embedded from those stop words. A
// text with no word at all has no features; it gets the unit vector on the first
// dimension, so that cosine distance stays defined.
//
// It is honest about what it is: it matches words and their near forms, not meaning.
// It is safe for concurrent use.
type Local struct {
	dims int
	pool sync.Pool // *localScratch
}

var _ Embedder = (*Local)(nil)

// NewLocal returns a local embedder of the given dimension.
func NewLocal(dimensions int) (*Local, error) {
	if dimensions < MinLocalDimensions || dimensions > MaxLocalDimensions {
		return nil, fmt.Errorf("llm.NewLocal: dimensions must be between %d and %d, got %d",
			MinLocalDimensions, MaxLocalDimensions, dimensions)
	}
	l := &Local{dims: dimensions}
	l.pool.New = func() any {
		return &localScratch{
			index: make(map[uint64]int32),
			acc:   make([]float64, dimensions),
			h:     fnv.New64a(),
		}
	}
	return l, nil
}

// Model returns LocalModel.
func (l *Local) Model() string { return LocalModel }

// Dimensions returns the length of every vector.
func (l *Local) Dimensions() int { return l.dims }

// Embed returns one vector per text; Tokens is the sum of CountTokens over texts.
func (l *Local) Embed(ctx context.Context, texts []string) (*Embeddings, error) {
	out := &Embeddings{Vectors: make([][]float32, len(texts)), Requests: 1, Counted: true}
	for i, text := range texts {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("llm.Local.Embed: %w", err)
		}
		out.Vectors[i] = l.vector(text)
		out.Tokens += CountTokens(text)
	}
	return out, nil
}

type span struct{ start, end int }

type localFeature struct {
	hash   uint64
	weight float64
	n      int32
}

// localScratch is the reusable working memory of one vector computation.
type localScratch struct {
	lower    []byte // the text's words, lower-cased, back to back
	words    []span // the words in lower
	content  []span // the words that are not stop words
	key      []byte // the feature being hashed
	runeEnds []int  // where each rune of the current word ends
	index    map[uint64]int32
	feats    []localFeature // in first-seen order, so that float sums are reproducible
	acc      []float64
	h        hash.Hash64
	trace    func(key []byte) // tests see the features through it
}

func (l *Local) vector(text string) []float32 {
	s := l.pool.Get().(*localScratch)
	v := l.vectorWith(s, text)
	if cap(s.lower) <= maxPooledText { // one huge text should not pin its memory
		l.pool.Put(s)
	}
	return v
}

// maxPooledText is the largest text whose working memory is kept for reuse.
const maxPooledText = 1 << 20

func (l *Local) vectorWith(s *localScratch, text string) []float32 {
	s.reset()

	s.tokenize(text)
	out := make([]float32, l.dims)
	if len(s.words) == 0 {
		out[0] = 1
		return out
	}
	s.content = s.content[:0]
	for _, w := range s.words {
		if _, stop := stopWords[string(s.lower[w.start:w.end])]; !stop {
			s.content = append(s.content, w)
		}
	}
	if len(s.content) == 0 {
		s.content = append(s.content, s.words...)
	}

	for i, w := range s.content {
		word := s.lower[w.start:w.end]
		s.key = append(append(s.key[:0], 'u'), word...)
		s.add(weightUnigram)
		if i > 0 {
			prev := s.content[i-1]
			s.key = append(append(s.key[:0], 'b'), s.lower[prev.start:prev.end]...)
			s.key = append(append(s.key, ' '), word...)
			s.add(weightBigram)
		}
		s.addTrigrams(word)
	}

	for _, f := range s.feats {
		v := f.weight * (1 + math.Log(float64(f.n)))
		if f.hash>>63 == 1 {
			v = -v
		}
		s.acc[f.hash%uint64(l.dims)] += v
	}
	var sum float64
	for _, v := range s.acc {
		sum += v * v
	}
	if sum == 0 {
		out[0] = 1
		return out
	}
	norm := math.Sqrt(sum)
	for i, v := range s.acc {
		out[i] = float32(v / norm)
	}
	return out
}

func (s *localScratch) reset() {
	s.lower = s.lower[:0]
	s.words = s.words[:0]
	s.feats = s.feats[:0]
	clear(s.index)
	clear(s.acc)
}

// tokenize appends the lower-cased words of text to s.lower and their spans to s.words.
// A word is a run of letters, digits and combining marks (so that a decomposed "ü"
// stays one word).
func (s *localScratch) tokenize(text string) {
	inWord := false
	start := 0
	for _, r := range text {
		var isWord bool
		if r < utf8.RuneSelf {
			isWord = 'a' <= r && r <= 'z' || '0' <= r && r <= '9' || 'A' <= r && r <= 'Z'
			if 'A' <= r && r <= 'Z' {
				r += 'a' - 'A'
			}
		} else {
			isWord = unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
			r = unicode.ToLower(r)
		}
		switch {
		case isWord && !inWord:
			inWord, start = true, len(s.lower)
			fallthrough
		case isWord:
			s.lower = utf8.AppendRune(s.lower, r)
		case inWord:
			inWord = false
			s.words = append(s.words, span{start, len(s.lower)})
		}
	}
	if inWord {
		s.words = append(s.words, span{start, len(s.lower)})
	}
}

// addTrigrams adds the character trigrams of "#word#".
func (s *localScratch) addTrigrams(word []byte) {
	s.runeEnds = s.runeEnds[:0]
	for i := 0; i < len(word); {
		_, size := utf8.DecodeRune(word[i:])
		i += size
		s.runeEnds = append(s.runeEnds, i)
	}
	n := len(s.runeEnds)
	if n > maxTrigramWordRunes {
		return
	}
	// Trigram i of the padded word "#word#" covers the runes i-1, i and i+1 of word,
	// -1 and n standing for the markers.
	for i := range n {
		first, last := i-1, i+1
		s.key = append(s.key[:0], 't')
		lo := 0
		if first < 0 {
			s.key = append(s.key, '#')
		} else if first > 0 {
			lo = s.runeEnds[first-1]
		}
		hi := len(word)
		if last < n {
			hi = s.runeEnds[last]
		}
		s.key = append(s.key, word[lo:hi]...)
		if last >= n {
			s.key = append(s.key, '#')
		}
		s.add(weightTrigram)
	}
}

// add counts the feature in s.key.
func (s *localScratch) add(weight float64) {
	if s.trace != nil {
		s.trace(s.key)
	}
	s.h.Reset()
	s.h.Write(s.key)
	h := s.h.Sum64()
	if i, ok := s.index[h]; ok {
		s.feats[i].n++
		return
	}
	s.index[h] = int32(len(s.feats))
	s.feats = append(s.feats, localFeature{hash: h, weight: weight, n: 1})
}

// stopWords are the most frequent English and German function words: matching on them
// says nothing about a text.
var stopWords = func() map[string]struct{} {
	words := []string{
		// English
		"a", "about", "above", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at",
		"be", "been", "being", "but", "by", "can", "could", "did", "do", "does", "doing", "for",
		"from", "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his", "how",
		"i", "if", "in", "into", "is", "it", "its", "just", "me", "more", "most", "my", "no", "nor",
		"not", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "out", "over",
		"own", "s", "same", "she", "should", "so", "some", "such", "t", "than", "that", "the",
		"their", "theirs", "them", "then", "there", "these", "they", "this", "those", "through",
		"to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where",
		"which", "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours",
		// German
		"aber", "alle", "als", "also", "am", "an", "auch", "auf", "aus", "bei", "bin", "bis",
		"bist", "da", "damit", "dann", "das", "dass", "daß", "dem", "den", "denn", "der", "des",
		"dich", "die", "dir", "doch", "du", "durch", "ein", "eine", "einem", "einen", "einer",
		"eines", "er", "es", "euch", "euer", "eure", "für", "hat", "hatte", "ich", "ihm", "ihn",
		"ihnen", "ihr", "ihre", "im", "in", "ins", "ist", "ja", "jede", "jeder", "kann", "mein",
		"meine", "mich", "mir", "mit", "nach", "nicht", "noch", "nun", "nur", "ob", "oder",
		"ohne", "sehr", "sein", "seine", "sich", "sie", "sind", "so", "um", "und", "uns",
		"unser", "unsere", "vom", "von", "vor", "war", "waren", "was", "weil", "wenn", "wer",
		"wie", "wir", "wird", "wo", "zu", "zum", "zur",
	}
	m := make(map[string]struct{}, len(words))
	for _, w := range words {
		m[w] = struct{}{}
	}
	return m
}()
