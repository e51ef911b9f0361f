package sitesearch

import (
	"context"
	"fmt"
	"strings"

	"github.com/sitetools/sitetools/internal/content"

	"github.com/sitetools/sitetools/internal/budget"
	"github.com/sitetools/sitetools/internal/llm"
)

// Ingester keeps the index in step with a source of pages: unchanged pages cost
// nothing, changed pages re-embed only their changed chunks, and pages gone from the
// source are removed.
type Ingester struct {
	Index    Index
	Embedder llm.Embedder
	Ledger   *budget.Ledger // nil: embedding calls are not recorded
	Chunking content.ChunkOptions
	// BatchSize is how many chunks one embedding request carries (default 64).
	BatchSize int
	// Reindex drops the whole index first: needed to change model or dimension.
	Reindex bool
	// Progress is told about every page (nil: nothing).
	Progress func(IngestStats)
}

// IngestStats counts what one run did.
type IngestStats struct {
	Pages          int // seen in the source
	Unchanged      int
	Added          int
	Updated        int
	Removed        int
	Failed         int // pages the source could not deliver (crawl errors)
	ChunksEmbedded int
	ChunksReused   int
	EmbedCalls     int
	Tokens         int
}

func (s IngestStats) String() string {
	return fmt.Sprintf("%d pages: %d added, %d updated, %d unchanged, %d removed; %d chunks embedded in %d calls (%d tokens), %d reused",
		s.Pages, s.Added, s.Updated, s.Unchanged, s.Removed, s.ChunksEmbedded, s.EmbedCalls, s.Tokens, s.ChunksReused)
}

// Walk yields the documents of a source, one call of fn each. It returns the URLs it
// could not fetch this time (a timeout, a 5xx): their pages are kept as they are.
type Walk func(fn func(*content.Document) error) (failed []string, err error)

// Sync ingests every document that walk yields under the name source, then removes the
// pages of source that walk neither yielded nor failed to fetch.
func (in *Ingester) Sync(ctx context.Context, source string, walk Walk) (IngestStats, error) {
	var st IngestStats
	model, dims := in.Embedder.Model(), in.Embedder.Dimensions()
	if !in.Reindex {
		if err := in.Index.CheckModel(ctx, model, dims); err != nil {
			return st, err
		}
	}
	if err := in.Index.Prepare(ctx, model, dims, in.Reindex); err != nil {
		return st, err
	}
	seen := map[string]bool{}
	failed, err := walk(func(doc *content.Document) error {
		if seen[doc.URL] {
			return nil
		}
		seen[doc.URL] = true
		st.Pages++
		if err := in.put(ctx, source, doc, &st); err != nil {
			return fmt.Errorf("%s: %w", doc.Path, err)
		}
		if in.Progress != nil {
			in.Progress(st)
		}
		return nil
	})
	if err != nil {
		return st, fmt.Errorf("sitesearch.Sync: %w", err)
	}
	st.Failed = len(failed)
	urls := make([]string, 0, len(seen)+len(failed))
	for u := range seen {
		urls = append(urls, u)
	}
	urls = append(urls, failed...)
	if st.Removed, err = in.Index.RemoveOthers(ctx, source, urls); err != nil {
		return st, fmt.Errorf("sitesearch.Sync: %w", err)
	}
	// The words typo correction knows follow the pages; an unchanged site costs nothing.
	if st.Added+st.Updated+st.Removed > 0 || in.Reindex {
		if err := in.Index.RebuildVocabulary(ctx); err != nil {
			return st, fmt.Errorf("sitesearch.Sync: %w", err)
		}
	}
	return st, nil
}

func (in *Ingester) put(ctx context.Context, source string, doc *content.Document, st *IngestStats) error {
	hash := content.DocumentHash(doc)
	oldHash, known, err := in.Index.PageHash(ctx, doc.URL)
	switch {
	case err != nil:
		return err
	case known && oldHash == hash:
		st.Unchanged++
		// The page may have moved between sources; it is still present.
		return in.Index.SetSource(ctx, doc.URL, source)
	case known:
		st.Updated++
	default:
		st.Added++
	}

	opts := in.Chunking
	if opts.Count == nil {
		opts.Count = llm.CountTokens
	}
	chunks := content.ChunkDocument(doc, opts)
	vectors, err := in.vectors(ctx, doc, chunks, st)
	if err != nil {
		return err
	}
	cfg := tsConfig(doc.Lang)
	records := make([]ChunkRecord, len(chunks))
	for i, c := range chunks {
		records[i] = ChunkRecord{Ord: c.Ord, Heading: c.Heading, Anchor: c.Anchor, Text: c.Text, Hash: c.Hash,
			TSConfig: cfg, Context: contextLine(doc, c), Vector: vectors[c.Ord]}
	}
	page := PageRecord{URL: doc.URL, Path: doc.Path, Title: doc.Title, Lang: doc.Lang, Body: pageBody(doc), Hash: hash, Source: source}
	return in.Index.PutPage(ctx, page, records)
}

// vectors returns one embedding per chunk, reusing the stored embedding of any chunk
// whose content hash the index already holds, and embedding the rest in batches.
func (in *Ingester) vectors(ctx context.Context, doc *content.Document, chunks []content.Chunk, st *IngestStats) ([][]float32, error) {
	hashes := make([]string, len(chunks))
	for i, c := range chunks {
		hashes[i] = c.Hash
	}
	known, err := in.Index.StoredVectors(ctx, hashes)
	if err != nil {
		return nil, err
	}

	out := make([][]float32, len(chunks))
	var todo []int
	for i, c := range chunks {
		if v, ok := known[c.Hash]; ok && len(v) == in.Embedder.Dimensions() {
			out[i] = v
			st.ChunksReused++
		} else {
			todo = append(todo, i)
		}
	}
	batch := in.BatchSize
	if batch <= 0 {
		batch = 64
	}
	for start := 0; start < len(todo); start += batch {
		idx := todo[start:min(start+batch, len(todo))]
		texts := make([]string, len(idx))
		for j, i := range idx {
			texts[j] = embeddingText(doc, chunks[i])
		}
		res, err := in.Embedder.Embed(ctx, texts)
		st.EmbedCalls++
		if in.Ledger != nil {
			e := budget.Entry{Kind: "embedding", Channel: "ingest", Tool: "ingest", Model: in.Embedder.Model(), Outcome: "ok"}
			if err != nil {
				e.Outcome = "error"
			} else {
				e.Tokens = res.Tokens
			}
			if lerr := in.Ledger.Record(ctx, e); lerr != nil && err == nil {
				return nil, lerr
			}
		}
		if err != nil {
			return nil, fmt.Errorf("embedding: %w", err)
		}
		if len(res.Vectors) != len(idx) {
			return nil, fmt.Errorf("embedding: %d vectors for %d texts", len(res.Vectors), len(idx))
		}
		st.Tokens += res.Tokens
		for j, i := range idx {
			out[i] = res.Vectors[j]
			known[chunks[i].Hash] = res.Vectors[j]
		}
		st.ChunksEmbedded += len(idx)
	}
	return out, nil
}

// contextLine is what a chunk is about: page title and section heading. It weighs more
// in full-text ranking.
func contextLine(doc *content.Document, c content.Chunk) string {
	if c.Heading == "" || c.Heading == doc.Title {
		return doc.Title
	}
	return doc.Title + " — " + c.Heading
}

func embeddingText(doc *content.Document, c content.Chunk) string {
	return contextLine(doc, c) + "\n\n" + c.Text
}

// pageBody is the page's indexed text as get_page returns it.
func pageBody(doc *content.Document) string {
	var b strings.Builder
	for _, s := range doc.Sections {
		if s.Heading != "" {
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(strings.Repeat("#", max(s.Level, 1)) + " " + s.Heading)
		}
		if s.Text != "" {
			if b.Len() > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(s.Text)
		}
	}
	return b.String()
}

// tsConfig is the text search configuration for a language: PostgreSQL's own for it,
// in the twin that removes accents first (sitetools_english, …; migrations/00006).
func tsConfig(lang string) string {
	switch lang {
	case "en":
		return "sitetools_english"
	case "de":
		return "sitetools_german"
	case "fr":
		return "sitetools_french"
	case "es":
		return "sitetools_spanish"
	case "it":
		return "sitetools_italian"
	case "nl":
		return "sitetools_dutch"
	case "pt":
		return "sitetools_portuguese"
	case "sv":
		return "sitetools_swedish"
	case "da":
		return "sitetools_danish"
	case "fi":
		return "sitetools_finnish"
	case "no", "nb":
		return "sitetools_norwegian"
	case "ru":
		return "sitetools_russian"
	}
	return "sitetools_simple"
}
