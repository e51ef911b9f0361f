package sitesearch

import (
	"context"
	"errors"
	"fmt"

	"github.com/sitetools/sitetools/internal/llm"
)

// rebuildRead is how many embedding calls' worth of chunks a rebuild reads at a time.
const rebuildRead = 8

// rebuild makes the index's vectors again with the ingester's model beside the live
// ones, then switches to them (Rebuilder): search answers from the live vectors all the
// while. It resumes an interrupted rebuild for the same model, where it stopped. The
// chunks' texts are the stored ones: the sync that follows fetches what changed.
func (in *Ingester) rebuild(ctx context.Context, rb Rebuilder, st *IngestStats) error {
	m := in.Model()
	state, err := rb.BeginRebuild(ctx, m)
	if err != nil {
		return err
	}
	st.Rebuild.Total, st.Rebuild.Resumed = state.Total, state.Resumed
	st.Rebuild.Done = state.Total - state.Left
	b := &batcher{in: in, st: st, size: in.BatchSize}
	if b.size <= 0 {
		b.size = 32
	}
	// A chunk written meanwhile gets an id past those read; SwitchRebuild refuses to switch
	// while any chunk lacks its new vector.
	for after := int64(0); ; {
		chunks, err := rb.PendingChunks(ctx, after, b.size*rebuildRead)
		if err != nil {
			return err
		}
		if len(chunks) == 0 {
			break
		}
		after = chunks[len(chunks)-1].ID
		ids, vecs, err := b.embedPending(ctx, chunks)
		if err != nil {
			return err
		}
		if err := rb.PutNextVectors(ctx, ids, vecs); err != nil {
			return err
		}
		st.Rebuild.Done += len(ids)
		if in.Progress != nil {
			in.Progress(*st)
		}
	}
	if in.HoldSwitch {
		return errHeld
	}
	if err := rb.SwitchRebuild(ctx, m); err != nil {
		return err
	}
	st.Rebuild.Switched = true
	return nil
}

// errHeld ends a sync whose rebuild is made and held unswitched (HoldSwitch).
var errHeld = errors.New("rebuild held before its switch")

// embedPending embeds the texts of chunks, each distinct text once, in calls of b.size.
func (b *batcher) embedPending(ctx context.Context, chunks []PendingChunk) ([]int64, [][]float32, error) {
	byText := map[string][]int{}
	var texts []string
	for i, c := range chunks {
		if _, ok := byText[c.Text]; !ok {
			texts = append(texts, c.Text)
		}
		byText[c.Text] = append(byText[c.Text], i)
	}
	ids, vecs := make([]int64, len(chunks)), make([][]float32, len(chunks))
	for start := 0; start < len(texts); start += b.size {
		part := texts[start:min(start+b.size, len(texts))]
		sent := make([]string, len(part))
		for i, t := range part {
			sent[i] = b.in.Prefixes.Document + t
		}
		res, err := b.call(ctx, sent)
		if err != nil {
			return nil, nil, err
		}
		for _, v := range res.Vectors {
			if len(v) != b.in.Embedder.Dimensions() {
				return nil, nil, fmt.Errorf("embedding: a vector of %d dimensions, not %d", len(v), b.in.Embedder.Dimensions())
			}
		}
		for i, t := range part {
			for _, j := range byText[t] {
				ids[j], vecs[j] = chunks[j].ID, res.Vectors[i]
			}
		}
		b.st.ChunksEmbedded += len(part)
	}
	return ids, vecs, nil
}

// call makes one embedding call of texts, counts it and charges it (charge). The answer's
// tokens are counted first: its ratio of reported to estimated tokens sizes the charge of
// its requests given up on.
func (b *batcher) call(ctx context.Context, texts []string) (*llm.Embeddings, error) {
	callCtx, delivery := llm.Track(ctx)
	res, err := b.in.Embedder.Embed(callCtx, texts)
	if err == nil {
		b.st.EmbedCalls += max(res.Requests, 1)
		b.st.Tokens += res.Tokens
		if res.Counted {
			b.st.Estimated += res.Tokens
		} else {
			for _, t := range texts {
				b.st.Estimated += llm.CountTokens(t)
			}
		}
	} else {
		b.st.EmbedCalls++
	}
	if lerr := b.charge(ctx, res, err, delivery); lerr != nil && err == nil {
		return nil, lerr
	}
	if err != nil {
		return nil, fmt.Errorf("embedding: %w", err)
	}
	if len(res.Vectors) != len(texts) {
		return nil, fmt.Errorf("embedding: %d vectors for %d texts", len(res.Vectors), len(texts))
	}
	return res, nil
}
