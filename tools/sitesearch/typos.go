package sitesearch

import (
	"context"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sitetools/sitetools/internal/content"
)

// Candidate is an indexed word close to a query word the index does not hold.
type Candidate struct {
	Word       string
	Chunks     int     // how many chunks hold it
	Similarity float64 // trigram similarity to the query word, 0 to 1
}

// maxCorrectedWords bounds the words of one query looked up for typos.
const maxCorrectedWords = 12

// correct finds the query's words that the index does not hold and the indexed word each
// most likely meant, with the same first letter: the fewest edits (a swap of two
// neighbours is one), then the likeliest spelling by trigram similarity, then the
// commoner word. Words shorter than
// four letters, with digits, or with no candidate close enough stay as they are.
func (s *searcher) correct(ctx context.Context, query string) (map[string]string, error) {
	var words []string
	for _, w := range queryWords(query) {
		if n := utf8.RuneCountInString(w); n >= 4 && n <= 40 && !strings.ContainsAny(w, "0123456789") && len(words) < maxCorrectedWords {
			words = append(words, w)
		}
	}
	words = s.known.unknown(words)
	if len(words) == 0 {
		return nil, nil
	}
	cands, err := s.opts.Index.Candidates(ctx, words)
	if err != nil || len(cands) == 0 {
		return nil, err
	}
	out := map[string]string{}
	for w, list := range cands {
		if len(list) == 0 {
			s.known.add(w)
		} else if best, ok := closest(w, list); ok {
			out[w] = best
		}
	}
	return out, nil
}

// knownWords remembers for a while the query words that need no correcting: most
// queries are made of them only, and then typo correction costs no round trip. A word
// the index gives up (an ingest removed its pages) is at worst left uncorrected until it
// is forgotten; a new word is always looked up.
type knownWords struct {
	mu    sync.Mutex
	until map[string]time.Time
	now   func() time.Time
}

const (
	knownWordsFor = 5 * time.Minute
	knownWordsMax = 50_000 // then all are forgotten at once
)

func newKnownWords(now func() time.Time) *knownWords {
	if now == nil {
		now = time.Now
	}
	return &knownWords{until: map[string]time.Time{}, now: now}
}

// unknown is those of words it does not remember, in order.
func (k *knownWords) unknown(words []string) []string {
	now := k.now()
	k.mu.Lock()
	defer k.mu.Unlock()
	out := words[:0:0]
	for _, w := range words {
		if t, ok := k.until[w]; !ok || now.After(t) {
			out = append(out, w)
		}
	}
	return out
}

func (k *knownWords) add(w string) {
	t := k.now().Add(knownWordsFor)
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.until) >= knownWordsMax {
		clear(k.until)
	}
	k.until[w] = t
}

// maxEdits is how many edits a correction of a word of n letters may make: most typos
// are one slip, and a looser bound turns words of another language into this one's.
func maxEdits(n int) int {
	if n < 8 {
		return 1
	}
	return 2
}

func closest(w string, list []Candidate) (string, bool) {
	limit := maxEdits(utf8.RuneCountInString(w))
	best, bestD := Candidate{}, limit+1
	first, _ := utf8.DecodeRuneInString(w)
	for _, c := range list {
		if f, _ := utf8.DecodeRuneInString(c.Word); f != first {
			continue // a slip rarely hits the first letter; another word often differs there
		}
		d := content.EditDistance(w, c.Word)
		if d > limit {
			continue
		}
		if d < bestD || d == bestD && (c.Similarity > best.Similarity ||
			c.Similarity == best.Similarity && (c.Chunks > best.Chunks || c.Chunks == best.Chunks && c.Word < best.Word)) {
			best, bestD = c, d
		}
	}
	return best.Word, bestD <= limit
}

// applyCorrections replaces the corrected words of query.
func applyCorrections(query string, corrected map[string]string) string {
	if len(corrected) == 0 {
		return query
	}
	fields := strings.Fields(query)
	for i, f := range fields {
		words := queryWords(f)
		if len(words) == 1 {
			if c, ok := corrected[words[0]]; ok {
				fields[i] = c
			}
		}
	}
	return strings.Join(fields, " ")
}
