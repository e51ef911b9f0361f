package sitesearch

import (
	"context"
	"errors"
	"time"
)

// ErrIndexSwitched is returned by a search whose query vector was made for vectors that a
// switch to a rebuilt index retired in between: it runs again with the new model.
var ErrIndexSwitched = errors.New("the index switched to another model during the search")

// LiveIndex is an Index that tells which model its live vectors were made with. Search
// embeds a query with that model, which is not the configured one while a rebuild for the
// configured one is under way (or after another process switched to its own).
type LiveIndex interface {
	// Live returns the live vectors' model and generation, or ok false for an empty
	// index; it may be up to a second old (ErrIndexSwitched covers a switch in between).
	Live(ctx context.Context) (m IndexModel, generation int64, ok bool, err error)
}

// Rebuilder is an Index that builds the vectors of another model beside the live ones
// and switches to them at once (postgres.SiteIndex).
type Rebuilder interface {
	// BeginRebuild starts a rebuild for m, or resumes the one under way for m; one for
	// another model is dropped.
	BeginRebuild(ctx context.Context, m IndexModel) (RebuildState, error)
	// PendingChunks returns up to n chunks with an id past after and no vector of the
	// rebuild, by id.
	PendingChunks(ctx context.Context, after int64, n int) ([]PendingChunk, error)
	// PutNextVectors stores vectors of the rebuild.
	PutNextVectors(ctx context.Context, ids []int64, vecs [][]float32) error
	// SwitchRebuild makes the rebuild's vectors the live ones, in one transaction.
	SwitchRebuild(ctx context.Context, m IndexModel) error
	// RebuildProgress reports the rebuild under way, if any.
	RebuildProgress(ctx context.Context) (p RebuildProgress, ok bool, err error)
}

// RebuildState is what BeginRebuild found: chunks left without a new vector, of all, and
// whether it resumed an interrupted rebuild for the same model.
type RebuildState struct {
	Left, Total int
	Resumed     bool
}

// PendingChunk is a chunk that needs a vector of the rebuild: its id and the text its
// vector is made of (context line and text, without the document prefix).
type PendingChunk struct {
	ID   int64
	Text string
}

// RebuildProgress is a rebuild under way: for which model, since when, and how many of
// the chunks have their new vector.
type RebuildProgress struct {
	Model   IndexModel `json:"model"`
	Started time.Time  `json:"started"`
	Done    int64      `json:"done"`
	Total   int64      `json:"total"`
}

// RebuildStats is what a sync's rebuild did (IngestStats.Rebuild): chunks of all that have
// their new vector, whether it resumed an interrupted one, and whether it switched.
type RebuildStats struct {
	Total, Done       int
	Resumed, Switched bool
}

// prepareModel makes sure the index's vectors are of the ingester's model before a sync.
// With Reindex, or with RebuildOnMismatch and an index of another model, it rebuilds them
// beside the live ones and switches (an Index that cannot is emptied instead: reset);
// otherwise an index of another model is an *ErrModelMismatch.
func (in *Ingester) prepareModel(ctx context.Context, st *IngestStats) (reset bool, err error) {
	err = in.Index.CheckModel(ctx, in.Model())
	var mismatch *ErrModelMismatch
	if !in.Reindex && !(in.RebuildOnMismatch && errors.As(err, &mismatch)) {
		return false, err
	}
	rb, ok := in.Index.(Rebuilder)
	if !ok {
		return true, nil
	}
	return false, in.rebuild(ctx, rb, st)
}
