package sitesearch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

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
	// Prefixes are the model's task prefixes: the document prefix goes before every
	// chunk embedded; both are recorded with the model, for search to match.
	Prefixes llm.Prefixes
	// BatchSize is how many chunks one embedding call carries (default 32). Pages share
	// calls: every call of a run but its last is full.
	BatchSize int
	// PricePerMTok prices the ledger's rows (USD per million tokens); 0: not priced.
	PricePerMTok float64
	// Reindex makes every chunk's vector again first, beside the live ones, and switches
	// to them once all are made (an index that is not a Rebuilder is emptied instead):
	// needed to change the model, its dimension or its prefixes. Search answers from the
	// live vectors meanwhile; an interrupted rebuild for the same model resumes.
	Reindex bool
	// RebuildOnMismatch rebuilds as Reindex does when the index holds another model's
	// vectors, where a sync would otherwise fail with *ErrModelMismatch: serve's syncs,
	// after the configured model changed.
	RebuildOnMismatch bool
	// HoldSwitch makes a rebuild's vectors and stops before the switch (and the sync):
	// the live index goes on answering, the new one can be measured beside it (`sitetools
	// eval --candidate`), and the next rebuild for the same model switches at once.
	HoldSwitch bool
	// Partial says the walk yields some of the source's pages, not all: Sync then removes
	// only the pages the walk found gone (404, 410), and leaves the others alone.
	Partial bool
	// MaxAge is how long a stored page may go without being fetched in full: past it (at
	// a share of it fixed by the page's URL, from half to all), the walk asks for it
	// without validators, whatever its <lastmod> (PageState.Due). 0: never.
	MaxAge time.Duration
	// Now is the clock of MaxAge and of when a page was fetched (nil: time.Now).
	Now func() time.Time
	// Progress is told about every page and every embedding call (nil: nothing).
	Progress func(IngestStats)
	// Linked is the walk of the PDFs that the pages yielded link to on their own site and
	// that the walk did not yield (content.Document.Links), at most MaxLinkedPDFs a run,
	// after the walk; in a full Sync also of the PDFs of the source the index holds that
	// the walk did not yield, so that a PDF linked from an unchanged page (a 304, which
	// has no links to read) stays while its server serves it. nil: none are followed.
	Linked func(urls []string) Walk
}

// Model is what the ingester's vectors are made with, as the index records it.
func (in *Ingester) Model() IndexModel {
	return IndexModel{Name: in.Embedder.Model(), Dimensions: in.Embedder.Dimensions(),
		QueryPrefix: in.Prefixes.Query, DocumentPrefix: in.Prefixes.Document}
}

// IngestStats counts what one run did.
type IngestStats struct {
	Pages     int // seen in the source
	Unchanged int // NotModified and Skipped among them
	Added     int
	Updated   int
	Removed   int
	Failed    int // pages the source could not deliver (crawl errors)
	// NotModified counts the unchanged pages whose server answered 304 to a conditional
	// request: no body, no parsing, no embedding.
	NotModified int
	// Skipped counts the unchanged pages not fetched at all: the sitemap's <lastmod> is
	// not newer than the one their stored copy was listed with.
	Skipped int
	// BytesFetched counts the page bodies the walk downloaded, in bytes.
	BytesFetched   int64
	ChunksEmbedded int
	ChunksReused   int
	EmbedCalls     int
	Tokens         int // as the provider counted them
	// Estimated is sitetools' own count of the tokens embedded: the ratio of Tokens to
	// it sizes the query budget's reservations (budget.StoreRatio).
	Estimated int
	// Rebuild is what the rebuild before the sync did (Reindex, RebuildOnMismatch).
	Rebuild RebuildStats
	// Unknown is what the ledger charged, beyond Tokens, for requests that may have
	// reached the provider without an answer (given up at their deadline, a broken
	// connection, a 5xx), each sized as the query path sizes a reservation.
	Unknown int
	// LeftOut counts the pages the source listed beyond its limit (a sitemap's past
	// INGEST_MAX_PAGES): not yielded, so not indexed. The caller that cut the list sets it.
	LeftOut int
	// Rejected are the documents refused for what they hold (an encrypted or broken PDF,
	// one over a cap of the PDF reader), each with its reason: not indexed, and not counted
	// as pages but in Failed when they ran out of time (their indexed copy is kept).
	Rejected []content.Rejection
}

func (s IngestStats) String() string {
	tokens := fmt.Sprintf("%d tokens", s.Tokens)
	if s.Unknown > 0 {
		tokens += fmt.Sprintf(", and %d charged for requests given up on", s.Unknown)
	}
	return fmt.Sprintf("%d pages: %d added, %d updated, %d unchanged, %d removed, %d failed; "+
		"%d chunks embedded in %d calls (%s), %d reused; %d not fetched (sitemap lastmod), %d not modified (304), %d bytes fetched",
		s.Pages, s.Added, s.Updated, s.Unchanged, s.Removed, s.Failed, s.ChunksEmbedded, s.EmbedCalls, tokens, s.ChunksReused,
		s.Skipped, s.NotModified, s.BytesFetched) + leftOut(s.LeftOut) + rejected(s.Rejected)
}

// Walk yields the documents of a source, one call of fn each. known tells it what the
// index holds of a URL, for it to fetch the page conditionally, or not at all; a
// document with NotModified set stands for a stored page that has not changed.
type Walk func(known func(url string) (PageState, bool), fn func(*content.Document) error) (WalkResult, error)

// WalkResult is what a walk says besides its documents.
type WalkResult struct {
	// Failed are the URLs it could not fetch this time (a timeout, a 5xx): their pages
	// are kept as they are.
	Failed []string
	// Gone are the URLs whose server answered 404 or 410. A full Sync removes them as it
	// removes every page not yielded; a Partial one removes these.
	Gone []string
	// Skipped are the URLs of stored pages it did not fetch, knowing them unchanged.
	Skipped []string
	// BytesFetched counts the page bodies downloaded.
	BytesFetched int64
	// Rejected are the documents refused for what they hold, with their reasons.
	Rejected []content.Rejection
}

// Sync ingests every document that walk yields under the name source, then removes the
// pages of source that walk neither yielded, skipped nor failed to fetch; with Partial,
// it removes only the pages walk found gone.
func (in *Ingester) Sync(ctx context.Context, source string, walk Walk) (IngestStats, error) {
	var st IngestStats
	reset, err := in.prepareModel(ctx, &st)
	if errors.Is(err, errHeld) {
		return st, nil // the new vectors are made, the live ones still answer
	}
	if err != nil {
		return st, err
	}
	if err := in.Index.Prepare(ctx, in.Model().Dimensions, reset); err != nil {
		return st, err
	}
	// One query for what the index holds, rather than one a page: an unchanged page then
	// costs no round trip at all.
	stored, err := in.Index.PageStates(ctx)
	if err != nil {
		return st, err
	}
	in.markDue(stored)
	b := newBatcher(ctx, in, source, &st, len(stored) == 0)
	b.w.vocabulary = in.pageVocabulary()
	seen := map[string]bool{}
	var lost []string // 304s for pages the index no longer holds
	links := newLinkSet()
	known := func(u string) (PageState, bool) {
		have, ok := stored[u]
		if in.Reindex {
			// Every page is read again, in full: after an upgrade whose text extraction or
			// chunking changed, a re-index is how pages are parsed anew. An unchanged text
			// still costs no embedding (its hash, and its chunks' vectors, are kept).
			have.Validators = Validators{}
		}
		return have, ok
	}
	yield := func(doc *content.Document) error {
		links.add(doc.Links)
		if seen[doc.URL] {
			return nil
		}
		have, ok := stored[doc.URL]
		if doc.NotModified && !ok {
			lost = append(lost, doc.URL)
			return nil
		}
		seen[doc.URL] = true
		st.Pages++
		if err := b.add(ctx, doc, have, ok); err != nil {
			return err
		}
		if in.Progress != nil {
			in.Progress(st)
		}
		return nil
	}
	res, err := walk(known, yield)
	if err == nil {
		res, err = in.followLinks(source, res, links, stored, seen, known, yield)
	}
	if err == nil {
		err = b.flush(ctx)
	}
	if werr := b.close(); err == nil {
		err = werr
	}
	if err != nil {
		return st, fmt.Errorf("sitesearch.Sync: %w", err)
	}
	res.Failed = append(res.Failed, lost...)
	if err := in.finish(ctx, source, &st, stored, seen, res); err != nil {
		return st, fmt.Errorf("sitesearch.Sync: %w", err)
	}
	return st, nil
}

// finish counts what the walk skipped or failed, removes the pages gone, and completes
// the index.
func (in *Ingester) finish(ctx context.Context, source string, st *IngestStats, stored map[string]PageState, seen map[string]bool, res WalkResult) error {
	for _, u := range res.Skipped {
		if _, ok := stored[u]; ok && !seen[u] {
			seen[u] = true
			st.Pages++
			st.Unchanged++
			st.Skipped++
		}
	}
	st.Failed = len(res.Failed)
	st.BytesFetched = res.BytesFetched
	st.Rejected = res.Rejected
	if in.Progress != nil {
		in.Progress(*st)
	}
	var err error
	if in.Partial {
		var gone []string
		for _, u := range res.Gone {
			if !seen[u] {
				gone = append(gone, u)
			}
		}
		st.Removed, err = in.Index.RemovePages(ctx, gone)
	} else {
		keep := make([]string, 0, len(seen)+len(res.Failed))
		for u := range seen {
			keep = append(keep, u)
		}
		st.Removed, err = in.Index.RemoveOthers(ctx, source, append(keep, res.Failed...))
	}
	if err != nil {
		return err
	}
	// The index build and the vocabulary's rebuild run side by side, each on a connection
	// of its own: the build leaves cores idle while it writes the graph out.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return in.Index.Finish(gctx, in.Model().Dimensions) })
	// The words typo correction knows follow the pages; an unchanged site costs nothing.
	if !in.pageVocabulary() && (st.Added+st.Updated+st.Removed > 0 || in.Reindex) {
		g.Go(func() error { return in.Index.RebuildVocabulary(gctx) })
	}
	return g.Wait()
}

// pageVocabulary reports whether the run keeps the words typo correction knows page by
// page, in the transaction of each page written or removed, instead of rebuilding them
// from every chunk at its end. A partial sync does: it writes a few pages (a publish
// hook's), whose words cost milliseconds, where the rebuild costs seconds of the
// database's time at 100 000 chunks. A full sync may change any number of pages, and a
// re-index starts over: for them, one rebuild costs less than as many updates.
func (in *Ingester) pageVocabulary() bool { return in.Partial && !in.Reindex }

// contextLine is what a chunk is about: page title and section heading. It weighs more
// in full-text ranking.
func contextLine(doc *content.Document, c content.Chunk) string {
	if c.Heading == "" || c.Heading == doc.Title {
		return doc.Title
	}
	return doc.Title + " — " + c.Heading
}

// embeddingText is what the model embeds for a chunk: its document prefix, the context
// line and the text.
func embeddingText(prefix string, doc *content.Document, c content.Chunk) string {
	return prefix + contextLine(doc, c) + "\n\n" + c.Text
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
