package sitesearch

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Index is the search index the tools and the ingester use; internal/postgres.SiteIndex
// keeps it in PostgreSQL. It is safe for concurrent use: Sync stores pages on a goroutine
// of its own while it reads the next ones.
type Index interface {
	// CheckModel returns an *ErrModelMismatch when the index holds vectors of another
	// model, dimension or prefixes; an empty index matches anything.
	CheckModel(ctx context.Context, m IndexModel) error
	// Prepare readies the index for vectors of dims dimensions; with reset, it empties
	// the index and forgets its model first. A store may defer building what searches need
	// until Finish (a first load is faster without).
	Prepare(ctx context.Context, dims int, reset bool) error
	// Finish builds what Prepare deferred, once the pages are written.
	Finish(ctx context.Context, dims int) error
	// Search returns up to q.Limit pages, best first, one hit (its best chunk) a page.
	Search(ctx context.Context, q Query) ([]Hit, error)
	// Page finds a page by absolute URL or by path; nil when there is none.
	Page(ctx context.Context, urlOrPath string) (*StoredPage, error)
	// PageStates returns the content hash, source and validators of every page, by URL
	// (Due not set).
	PageStates(ctx context.Context) (map[string]PageState, error)
	// KeepPage records that an unchanged page now comes from source, with the validators
	// of its latest response and sitemap entry; it writes only when one of them moved.
	KeepPage(ctx context.Context, url, source string, v Validators) error
	// Candidates returns, for each of words the index does not hold, the indexed words
	// close to it (a word with none close is left out), and with none each word that needs
	// no correcting: one it holds, in any form, or a stop word.
	Candidates(ctx context.Context, words []string) (map[string][]Candidate, error)
	// RebuildVocabulary makes the words Candidates knows those of the pages held now, from
	// every chunk: what a full sync does once at its end.
	RebuildVocabulary(ctx context.Context) error
	// StoredVectors returns the embedding held for each of the content hashes it knows.
	StoredVectors(ctx context.Context, hashes []string) (map[string][]float32, error)
	// PutPage stores a page and replaces its chunks, and records m as the index's model,
	// all or nothing: an index never holds a model without a page of it, or the reverse.
	// With vocabulary, the words Candidates knows follow the page's chunks in the same
	// transaction (a partial sync); without, they wait for RebuildVocabulary.
	PutPage(ctx context.Context, m IndexModel, p PageRecord, chunks []ChunkRecord, vocabulary bool) error
	// RemoveOthers removes the pages of source not in keep and returns how many. The
	// words Candidates knows wait for RebuildVocabulary: a full sync's step, which ends
	// with it.
	RemoveOthers(ctx context.Context, source string, keep []string) (int, error)
	// RemovePages removes the pages of urls, of any source, and returns how many it held;
	// the words Candidates knows lose theirs in the same transaction.
	RemovePages(ctx context.Context, urls []string) (int, error)
}

// PageState is what an ingest needs to know of a stored page: whether it changed,
// whether it moved to another source, and how to ask its server whether it changed
// without downloading it.
type PageState struct {
	Hash, Source string
	Validators
	// Due says the stored copy is older than the ingest's MaxAge allows: the walk fetches
	// it in full, without validators. Sync sets it; no index stores it.
	Due bool
}

// Validators are what a re-crawl needs to fetch a page conditionally, or not at all: the
// ETag and Last-Modified headers of the response its stored copy came from, as sent, and
// the sitemap's <lastmod> it was listed with then (zero: none); and when the stored copy
// was last fetched in full, for a re-crawl to know when not to take a 304 for it.
type Validators struct {
	ETag, LastModified string
	Lastmod            time.Time
	// Fetched is when the page was last fetched in full. Given to KeepPage it is recorded
	// (zero: left as it is); PutPage records it, or the time of writing when zero.
	Fetched time.Time
}

// PageRecord is a page as the index stores it.
type PageRecord struct {
	URL, Path, Title, Lang, Body, Hash, Source string
	Validators
}

// ChunkRecord is a chunk as the index stores it, with its embedding and the full-text
// configuration its text is indexed with.
type ChunkRecord struct {
	Ord                     int
	Heading, Anchor, Text   string
	Hash, TSConfig, Context string
	Vector                  []float32
}

// IndexModel is what made an index's vectors: the model, their dimension and the task
// prefixes put before queries and documents. Vectors made otherwise cannot be compared
// with them.
type IndexModel struct {
	Name           string
	Dimensions     int
	QueryPrefix    string
	DocumentPrefix string
}

func (m IndexModel) String() string {
	s := fmt.Sprintf("%s (%d dimensions", m.Name, m.Dimensions)
	if m.QueryPrefix != "" || m.DocumentPrefix != "" {
		s += fmt.Sprintf(", query prefix %q, document prefix %q", m.QueryPrefix, m.DocumentPrefix)
	}
	return s + ")"
}

// ErrModelMismatch means the index holds vectors of another model, dimension or prefixes.
type ErrModelMismatch struct {
	Have, Want IndexModel
}

func (e *ErrModelMismatch) Error() string {
	have, want := e.Have, e.Want
	sameModel := have.Name == want.Name && have.Dimensions == want.Dimensions
	samePrefixes := have.QueryPrefix == want.QueryPrefix && have.DocumentPrefix == want.DocumentPrefix
	var b strings.Builder
	what := "the model"
	if sameModel {
		what = "the task prefixes"
		fmt.Fprintf(&b, "the search index holds embeddings of %s (%d dimensions) made with other task prefixes than this configuration's",
			have.Name, have.Dimensions)
	} else {
		fmt.Fprintf(&b, "the search index holds embeddings of %s (%d dimensions), but this configuration uses %s (%d dimensions)",
			have.Name, have.Dimensions, want.Name, want.Dimensions)
	}
	if !samePrefixes {
		// Both pairs, always: a prefix left empty is as much part of the index as one set.
		fmt.Fprintf(&b, "; the index's: %s; the configuration's (EMBEDDINGS_QUERY_PREFIX, EMBEDDINGS_DOCUMENT_PREFIX): %s",
			prefixPair(have), prefixPair(want))
	}
	fmt.Fprintf(&b, "; vectors made otherwise cannot be compared: to change %s, rebuild the index with `sitetools ingest --reindex ...` "+
		"or, with INGEST_SITEMAP_URL, POST /admin/reindex {\"all\": true} (search answers with the index's model until the rebuild switches), "+
		"or configure what the index was built with", what)
	if sameModel {
		fmt.Fprintf(&b, " (EMBEDDINGS_QUERY_PREFIX=%s EMBEDDINGS_DOCUMENT_PREFIX=%s keeps this index as it is)",
			prefixSetting(have.QueryPrefix), prefixSetting(have.DocumentPrefix))
	}
	return b.String()
}

// prefixPair names a model's two task prefixes, "none" for one left empty.
func prefixPair(m IndexModel) string {
	return "query prefix " + prefixSetting(m.QueryPrefix) + " and document prefix " + prefixSetting(m.DocumentPrefix)
}

// prefixSetting is a prefix as its setting takes it: "none" for no prefix, otherwise
// quoted, a line break as \n.
func prefixSetting(p string) string {
	if p == "" {
		return "none"
	}
	return strconv.Quote(p)
}

// Hit is one search result: the best chunk of one page.
type Hit struct {
	Title   string  `json:"title"`
	URL     string  `json:"url"`
	Anchor  string  `json:"anchor,omitempty"`
	Snippet string  `json:"snippet"`
	Score   float64 `json:"score"`
	// Matched says why the page ranked: "vector" (semantic neighbour), "fulltext" (the
	// query's own words), "synonym" (a synonym of them), "corrected" (a corrected word).
	Matched []string `json:"matched"`
	// Distance is the cosine distance of the page's best chunk to the query's vector: 0
	// is the same direction, 2 the opposite, and 2 also for a page the vector half did
	// not find. Not part of the result.
	Distance float64 `json:"-"`
	// Coverage is the share of the query's words (stop words aside) the page's best chunk
	// holds, from 0 to 1. Not part of the result.
	Coverage float64 `json:"-"`
}

// Query is what Search looks for.
type Query struct {
	Text string
	// Synonyms are terms the full-text search also looks for (SEARCH_SYNONYMS_FILE).
	Synonyms []string
	// Corrections are the indexed words meant by misspelled words of Text.
	Corrections []string
	// Analyze is the language Text's words are stemmed in: "en", "de", or "" both.
	Analyze string
	// Instant is search_site's as-you-type mode: full-text only, every one of Terms must
	// match, and the word being typed (Prefix, "" none) through one of the index's
	// commonest words that start with it. Text, Synonyms, Corrections and Vector are
	// then not used.
	Instant bool
	// Terms are the words typed so far, each with its alternatives (its correction, its
	// synonyms) joined by '|'.
	Terms  []string
	Prefix string
	Vector []float32 // nil: full-text only
	// Generation is that of the live vectors Vector was made for (Live); 0: not known.
	// Search returns ErrIndexSwitched when a switch retired them in between.
	Generation int64
	Limit      int
	Lang       string // "" any
	PathPrefix string // "" any
}

// StoredPage is a page as the index holds it.
type StoredPage struct {
	URL, Path, Title, Lang, Body string
}

const maxSnippetRunes = 320

// boundSnippet folds a snippet's spacing and cuts it to n characters. A cut inside a
// match drops the match's opening "**": the snippet's marks stay in pairs.
func boundSnippet(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if r[n-1] == '*' && r[n] == '*' {
		n-- // not between the two stars of a mark
	}
	cut := string(r[:n])
	if strings.Count(cut, "**")%2 == 1 {
		i := strings.LastIndex(cut, "**")
		cut = cut[:i] + cut[i+2:]
	}
	return strings.TrimSpace(cut) + "…"
}
