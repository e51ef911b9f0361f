package sitesearch

import (
	"context"
	"fmt"
	"time"

	"github.com/sitetools/sitetools/internal/budget"
	"github.com/sitetools/sitetools/internal/content"
	"github.com/sitetools/sitetools/internal/llm"
)

// batcher writes the pages of one Sync. The chunks that have no stored embedding wait in
// a queue shared by all pages, and are embedded in full batches; a page goes to the
// writer as soon as every chunk of it has its vector. So a site of small pages costs one
// embedding call per BatchSize chunks, not one per page, and at most a batch's worth of
// pages waits.
type batcher struct {
	in     *Ingester
	source string
	st     *IngestStats
	size   int
	opts   content.ChunkOptions
	w      *writer
	// queue holds the chunks to embed in arrival order, each content hash once; waiting
	// holds, by content hash, the chunks whose vector that embedding will be.
	queue   []queuedChunk
	waiting map[string][]chunkRef
	// fresh: the index held no page when the run began, so a chunk can have a stored
	// vector only if this run wrote it; written holds those hashes, and the index is
	// asked about them alone.
	fresh   bool
	written map[string]bool
	// storedRatio is the provider's token ratio stored for the model (budget.StoreRatio),
	// once read (ratioRead): it scales the charge of a request whose delivery is unknown.
	storedRatio float64
	ratioRead   bool
}

type queuedChunk struct{ hash, text string }

type chunkRef struct {
	page *pendingPage
	i    int
}

// pendingPage is a page to store once its missing chunks have their vectors.
type pendingPage struct {
	page    PageRecord
	records []ChunkRecord
	missing int
}

// newBatcher starts the writer of one Sync, which close stops; fresh says the index held
// no page when the run began.
func newBatcher(ctx context.Context, in *Ingester, source string, st *IngestStats, fresh bool) *batcher {
	b := &batcher{in: in, source: source, st: st, size: in.BatchSize, opts: in.Chunking, w: startWriter(ctx, in.Index, in.Model()),
		waiting: map[string][]chunkRef{}, fresh: fresh, written: map[string]bool{}}
	if b.size <= 0 {
		b.size = 32
	}
	if b.opts.Count == nil {
		b.opts.Count = llm.CountTokens
	}
	return b
}

// add takes one page of the walk: unchanged, it costs nothing (or records a new
// source); otherwise its chunks reuse what the index holds and queue the rest.
func (b *batcher) add(ctx context.Context, doc *content.Document, have PageState, known bool) error {
	if doc.NotModified {
		// Sync passes on a 304 only for a page the index holds.
		b.st.Unchanged++
		b.st.NotModified++
		return b.keep(ctx, doc, have)
	}
	hash := content.DocumentHash(doc)
	switch {
	case known && have.Hash == hash:
		b.st.Unchanged++
		return b.keep(ctx, doc, have)
	case known:
		b.st.Updated++
	default:
		b.st.Added++
	}
	chunks := content.ChunkDocument(doc, b.opts)
	p := &pendingPage{
		page: PageRecord{URL: doc.URL, Path: doc.Path, Title: doc.Title, Lang: doc.Lang, Body: pageBody(doc), Hash: hash, Source: b.source,
			Validators: b.in.fetchedNow(validatorsOf(doc))},
		records: make([]ChunkRecord, len(chunks)),
	}
	cfg := tsConfig(doc.Lang)
	hashes := make([]string, len(chunks))
	for i, c := range chunks {
		p.records[i] = ChunkRecord{Ord: c.Ord, Heading: c.Heading, Anchor: c.Anchor, Text: c.Text, Hash: c.Hash,
			TSConfig: cfg, Context: contextLine(doc, c)}
		hashes[i] = c.Hash
	}
	stored, err := b.stored(ctx, hashes)
	if err != nil {
		return pageErr(doc, err)
	}
	for i, c := range chunks {
		if v, ok := stored[c.Hash]; ok && len(v) == b.in.Embedder.Dimensions() {
			p.records[i].Vector = v
			b.st.ChunksReused++
			continue
		}
		p.missing++
		refs, queued := b.waiting[c.Hash]
		b.waiting[c.Hash] = append(refs, chunkRef{p, i})
		if queued {
			b.st.ChunksReused++ // the same text is on its way already
			continue
		}
		b.queue = append(b.queue, queuedChunk{c.Hash, embeddingText(b.in.Prefixes.Document, doc, c)})
	}
	if p.missing == 0 {
		return b.store(p)
	}
	for len(b.queue) >= b.size {
		if err := b.embed(ctx, b.size); err != nil {
			return err
		}
	}
	return nil
}

// keep records what moved of an unchanged page: its source, its validators.
func (b *batcher) keep(ctx context.Context, doc *content.Document, have PageState) error {
	v := validatorsOf(doc)
	if have.Due && !doc.NotModified {
		v = b.in.fetchedNow(v) // the full fetch MaxAge asked for
	}
	if v.Fetched.IsZero() && have.Source == b.source && have.ETag == v.ETag && have.LastModified == v.LastModified && have.Lastmod.Equal(v.Lastmod) {
		return nil
	}
	return pageErr(doc, b.in.Index.KeepPage(ctx, doc.URL, b.source, v))
}

// validatorsOf are the validators a document came with, its <lastmod> to the
// microsecond, as the index keeps it.
func validatorsOf(doc *content.Document) Validators {
	return Validators{ETag: doc.ETag, LastModified: doc.LastModified, Lastmod: doc.Lastmod.Truncate(time.Microsecond)}
}

func pageErr(doc *content.Document, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", doc.Path, err)
	}
	return nil
}

// stored returns the vectors held for hashes: those in flight to the index first, then
// those in it.
func (b *batcher) stored(ctx context.Context, hashes []string) (map[string][]float32, error) {
	out := b.w.lookup(hashes)
	var ask []string
	for _, h := range hashes {
		if _, ok := out[h]; !ok && (!b.fresh || b.written[h]) {
			ask = append(ask, h)
		}
	}
	if len(ask) == 0 {
		return out, nil
	}
	held, err := b.in.Index.StoredVectors(ctx, ask)
	for h, v := range held {
		out[h] = v
	}
	return out, err
}

// flush embeds what is left in the queue and hands over the pages that waited for it.
func (b *batcher) flush(ctx context.Context) error {
	for len(b.queue) > 0 {
		if err := b.embed(ctx, min(b.size, len(b.queue))); err != nil {
			return err
		}
	}
	return nil
}

// close waits until every page handed over is stored, and returns the first error.
func (b *batcher) close() error { return b.w.close() }

// embed embeds the first n queued chunks in one call, and stores every page that no
// longer misses a vector.
func (b *batcher) embed(ctx context.Context, n int) error {
	next := b.queue[:n]
	texts := make([]string, n)
	for i, q := range next {
		texts[i] = q.text
	}
	res, err := b.call(ctx, texts)
	if err != nil {
		return err
	}
	b.st.ChunksEmbedded += n
	if b.in.Progress != nil {
		b.in.Progress(*b.st)
	}
	var ready []*pendingPage
	for i, q := range next {
		for _, r := range b.waiting[q.hash] {
			r.page.records[r.i].Vector = res.Vectors[i]
			if r.page.missing--; r.page.missing == 0 {
				ready = append(ready, r.page)
			}
		}
		delete(b.waiting, q.hash)
	}
	b.queue = append(b.queue[:0], b.queue[n:]...)
	for _, p := range ready {
		if err := b.store(p); err != nil {
			return err
		}
	}
	return nil
}

// charge writes the ledger rows of one embedding call (res and err are its outcome, d
// its requests) as the query path charges its own: what the provider answered at the
// tokens it reported (budget.OutcomeOK), and every request that may have reached it
// without an answer that settles it — given up at EMBEDDINGS_INGEST_TIMEOUT and sent
// again in halves, its connection broken after it was written, a 5xx — a row of its own
// (budget.OutcomeUnknown), sized as the query path sizes a reservation
// (budget.SizeBy): sitetools' estimate of its inputs times the provider's token ratio
// and budget.RatioMargin, or budget.AssumedRatio while no ratio is known. A model server
// computes what it received, and a provider bills it, whether anyone still waits for
// the answer or not. A call that reached no provider, or that it refused, is one row of
// no tokens (budget.OutcomeError).
func (b *batcher) charge(ctx context.Context, res *llm.Embeddings, err error, d *llm.Delivery) error {
	var rows []budget.Entry
	switch {
	case err == nil:
		rows = append(rows, b.entry(res.Tokens, budget.OutcomeOK))
	case d.Answered() > 0: // the parts of a split batch answered before another part failed
		rows = append(rows, b.entry(d.AnsweredTokens(), budget.OutcomeOK))
	}
	if estimates := d.UnknownEstimates(); len(estimates) > 0 {
		k := b.ratio(ctx)
		for _, e := range estimates {
			tokens := int(budget.SizeBy(k, int64(e)))
			b.st.Unknown += tokens
			rows = append(rows, b.entry(tokens, budget.OutcomeUnknown))
		}
	}
	if len(rows) == 0 {
		rows = append(rows, b.entry(0, budget.OutcomeError))
	}
	if b.in.Ledger == nil {
		return nil
	}
	var first error
	for _, e := range rows {
		if lerr := b.in.Ledger.Record(ctx, e); lerr != nil && first == nil {
			first = lerr
		}
	}
	return first
}

// entry is a ledger row of the ingest's embedding calls.
func (b *batcher) entry(tokens int, outcome string) budget.Entry {
	return budget.Entry{Kind: "embedding", Channel: "ingest", Tool: "ingest", Model: b.in.Embedder.Model(),
		Tokens: tokens, CostUSD: float64(tokens) * b.in.PricePerMTok / 1e6, Outcome: outcome}
}

// ratio is how many tokens the provider counts for each token of sitetools' estimate:
// what this run's answers reported so far, the call being charged included, or before
// the first, what is stored for the model (by an earlier ingest, or the replicas'
// queries); 0 while neither is known.
func (b *batcher) ratio(ctx context.Context) float64 {
	if b.st.Tokens > 0 && b.st.Estimated > 0 {
		return float64(b.st.Tokens) / float64(b.st.Estimated)
	}
	if !b.ratioRead && b.in.Ledger != nil {
		// A failed read is tried again at the next charge; meanwhile none is known.
		if k, err := b.in.Ledger.StoredRatio(ctx, "embedding", b.in.Embedder.Model()); err == nil {
			b.storedRatio, b.ratioRead = k, true
		}
	}
	return b.storedRatio
}

// store hands a page whose chunks all have their vectors over to the writer.
func (b *batcher) store(p *pendingPage) error {
	if b.fresh {
		for _, r := range p.records {
			b.written[r.Hash] = true
		}
	}
	return b.w.put(p)
}
