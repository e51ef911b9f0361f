package sitesearch

import (
	"context"
	"fmt"
	"sync"
)

// writeAhead is how many pages may wait for the writer.
const writeAhead = 32

// writers is how many pages are written at once, each on a connection of its own: the
// database's work for a page (its tsvectors, the GIN and B-tree entries) then runs on a
// second core while the first waits on a round trip.
const writers = 2

// writer stores pages on goroutines of its own (writers of them), so that the database
// writes pages while the next are read, chunked and embedded. Until a page is stored its vectors are in
// flight, and lookup finds them there: a chunk is never embedded twice because its page
// was on its way.
type writer struct {
	index Index
	model IndexModel
	pages chan *pendingPage
	wg    sync.WaitGroup // the writers' goroutines

	// vocabulary: each write keeps the index's vocabulary (Ingester.pageVocabulary). Set
	// before the first put, which orders it before the writers read it.
	vocabulary bool

	mu       sync.Mutex
	err      error                     // the first failed write
	inflight map[string]inflightVector // by content hash
}

type inflightVector struct {
	vec   []float32
	pages int // how many pages in flight hold it
}

func startWriter(ctx context.Context, index Index, model IndexModel) *writer {
	w := &writer{index: index, model: model, pages: make(chan *pendingPage, writeAhead), inflight: map[string]inflightVector{}}
	for range writers {
		w.wg.Go(func() { w.run(ctx) })
	}
	return w
}

func (w *writer) run(ctx context.Context) {
	for p := range w.pages {
		var err error
		if w.failed() == nil {
			if err = w.index.PutPage(ctx, w.model, p.page, p.records, w.vocabulary); err != nil {
				err = fmt.Errorf("%s: %w", p.page.Path, err)
			}
		}
		w.mu.Lock()
		if err != nil && w.err == nil {
			w.err = err
		}
		// Stored (or failed): the vectors are no longer in flight.
		for _, r := range p.records {
			if v := w.inflight[r.Hash]; v.pages > 1 {
				v.pages--
				w.inflight[r.Hash] = v
			} else {
				delete(w.inflight, r.Hash)
			}
		}
		w.mu.Unlock()
	}
}

func (w *writer) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// put hands a page over to be stored, unless a write failed already.
func (w *writer) put(p *pendingPage) error {
	w.mu.Lock()
	err := w.err
	if err == nil {
		for _, r := range p.records {
			v := w.inflight[r.Hash]
			v.vec, v.pages = r.Vector, v.pages+1
			w.inflight[r.Hash] = v
		}
	}
	w.mu.Unlock()
	if err != nil {
		return err
	}
	w.pages <- p
	return nil
}

// lookup returns the vectors in flight of the hashes it knows. A hash it does not know
// is stored already, or was never written: ask the index after, not before.
func (w *writer) lookup(hashes []string) map[string][]float32 {
	out := map[string][]float32{}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, h := range hashes {
		if v, ok := w.inflight[h]; ok {
			out[h] = v.vec
		}
	}
	return out
}

// close waits until every page handed over is stored, and returns the first error.
func (w *writer) close() error {
	close(w.pages)
	w.wg.Wait()
	return w.err
}
