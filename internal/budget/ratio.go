package budget

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sitetools/sitetools/internal/postgres/pgerr"
)

// Reservations are sized by what the provider reported before. A provider's tokenizer is
// not sitetools' estimate: a model with another vocabulary, special tokens, or a provider
// that simply counts more, can bill several times the estimate. So each budget learns,
// per model, the ratio of reported to estimated tokens, and reserves the estimate times
// that ratio times RatioMargin; until a model has reported once, it assumes
// AssumedRatio. With a provider that counts at most that much, no call is charged more
// than it reserved, and the day's used can never pass its limit.
const (
	AssumedRatio = 8.0
	RatioMargin  = 1.25
	// ratioDecay is how fast a learned ratio comes down after a provider counted less:
	// it rises at once to any higher report, and moves a tenth of the way down.
	ratioDecay = 0.1
)

// What a call holds while it is in flight does not trust the learned ratio. A provider
// can start counting more without warning (another model behind the same name, another
// language), and every call already in flight was sized by the old ratio: the overshoot
// would grow with the calls in flight. So a call holds, of the day's budget,
//
//	hold = ⌈estimate × K⌉ (+ the caller's allowance for special tokens),
//	K    = max(AssumedRatio, HoldFactor × the highest ratio reported in the last peakWindow),
//
// and is admitted only if the day's used, plus what every call in flight holds, plus its
// own hold, is within the limit (the leases enforce this across replicas). A call is
// charged what the provider reports, or its reservation (estimate × ratio × RatioMargin)
// when its delivery is unknown; the difference to its hold goes back when it settles.
// Hence, for a day of limit L, whatever the ratio does within the day:
//
//	provider's count ≤ max(1, ρ / K) × L
//
// where ρ is the highest count per estimated token of an answered request beyond the
// special-token allowance: never past the limit while the provider counts at most 8 ×
// sitetools' estimate, or twice the highest ratio it reported, whichever is more.
// Requests whose delivery stays unknown are charged at their reservation; what such a
// request counted beyond it is not in the books, and comes on top.
const (
	HoldFactor = 2.0
	peakWindow = 24 * time.Hour
)

type ratios struct {
	mu     sync.Mutex
	k      map[string]float64
	stored map[string]float64 // as last stored or loaded
	dirty  map[string]bool    // learned here, not yet stored
	peak   map[string]peak    // the highest report in the window
}

// peak is the highest ratio a model reported since at, within peakWindow.
type peak struct {
	ratio float64
	at    time.Time
}

// Size is what to reserve for one request of model whose input sitetools estimates at
// estimate tokens: estimate × the learned ratio × RatioMargin, or × AssumedRatio before
// the model's first report; never less than estimate.
func (b *Budget) Size(model string, estimate int64) int64 { return SizeBy(b.Ratio(model), estimate) }

// SizeBy is what a request that sitetools estimates at estimate tokens may cost with a
// provider whose ratio of reported to estimated tokens is ratio (0: not known): estimate
// × ratio × RatioMargin, or × AssumedRatio without a ratio; never less than estimate.
// Reservations are sized so, and a request whose delivery is unknown is charged so.
func SizeBy(ratio float64, estimate int64) int64 {
	k := ratio * RatioMargin
	if !(ratio > 0) || math.IsInf(ratio, 0) {
		k = AssumedRatio
	}
	return max(int64(math.Ceil(k*float64(estimate))), estimate)
}

// Hold is what a request of model that sitetools estimates at estimate tokens holds of
// the day's budget while it is in flight: estimate × max(AssumedRatio, HoldFactor × the
// highest ratio of the window, or the learned one if higher); never less than Size.
func (b *Budget) Hold(model string, estimate int64) int64 {
	r := &b.ratios
	r.mu.Lock()
	k := r.k[model]
	if p, ok := r.peak[model]; ok && time.Since(p.at) <= peakWindow {
		k = max(k, p.ratio)
	}
	r.mu.Unlock()
	return holdBy(k, estimate)
}

// holdBy is Hold for the highest ratio k (0: none known).
func holdBy(k float64, estimate int64) int64 {
	if !(k > 0) || math.IsInf(k, 0) {
		k = 0
	}
	h := int64(math.Ceil(max(AssumedRatio, HoldFactor*k) * float64(estimate)))
	return max(h, SizeBy(k, estimate))
}

// Learn records that the provider counted reported tokens for a request of model that
// sitetools estimated at estimate tokens.
func (b *Budget) Learn(model string, estimate, reported int64) {
	if estimate <= 0 || reported <= 0 {
		return
	}
	obs := float64(reported) / float64(estimate)
	r := &b.ratios
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.k == nil {
		r.k = map[string]float64{}
	}
	if p, ok := r.peak[model]; !ok || obs >= p.ratio || time.Since(p.at) > peakWindow {
		if r.peak == nil {
			r.peak = map[string]peak{}
		}
		r.peak[model] = peak{ratio: obs, at: time.Now()}
	}
	k, ok := r.k[model]
	next := obs
	if ok && obs <= k {
		next = k + ratioDecay*(obs-k)
	}
	r.k[model] = next
	// Stored when it is new or moved by more than a percent since it was last stored,
	// not on every call.
	if s, stored := r.stored[model]; !stored || math.Abs(next-s) > s/100 {
		if r.dirty == nil {
			r.dirty = map[string]bool{}
		}
		r.dirty[model] = true
	}
}

// LoadRatios reads the ratios stored for this budget's kind (by ingest, or by any
// replica), for models that this process has not learned itself yet.
func (b *Budget) LoadRatios(ctx context.Context) error {
	rows, err := b.pool.Query(ctx, `SELECT model, ratio FROM provider_ratios WHERE kind = $1`, b.opts.Kind)
	if err != nil {
		return pgerr.Wrap("budget.LoadRatios", err)
	}
	stored := map[string]float64{}
	for rows.Next() {
		var model string
		var k float64
		if err := rows.Scan(&model, &k); err != nil {
			return pgerr.Wrap("budget.LoadRatios", err)
		}
		stored[model] = k
	}
	if err := rows.Err(); err != nil {
		return pgerr.Wrap("budget.LoadRatios", err)
	}
	r := &b.ratios
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.k == nil {
		r.k = map[string]float64{}
	}
	if r.stored == nil {
		r.stored = map[string]float64{}
	}
	for model, k := range stored {
		r.stored[model] = k
		if _, ok := r.k[model]; !ok {
			r.k[model] = k
		}
	}
	return nil
}

// storeRatios writes the ratios learned here since the last write.
func (b *Budget) storeRatios(ctx context.Context) error {
	r := &b.ratios
	r.mu.Lock()
	pending := map[string]float64{}
	if r.stored == nil {
		r.stored = map[string]float64{}
	}
	for model := range r.dirty {
		pending[model] = r.k[model]
		r.stored[model] = r.k[model]
	}
	r.dirty = nil
	r.mu.Unlock()
	for model, k := range pending {
		if err := StoreRatio(ctx, b.pool, b.opts.Kind, model, k); err != nil {
			return err
		}
	}
	return nil
}

// StoreRatio records that the provider of kind counts ratio tokens for each token of
// sitetools' estimate with model (ingest stores what its batches reported).
func StoreRatio(ctx context.Context, pool *pgxpool.Pool, kind, model string, ratio float64) error {
	if !(ratio > 0) || math.IsInf(ratio, 0) {
		return nil
	}
	_, err := pool.Exec(ctx, `INSERT INTO provider_ratios (kind, model, ratio) VALUES ($1, $2, $3)
		ON CONFLICT (kind, model) DO UPDATE SET ratio = EXCLUDED.ratio, updated_at = now()`, kind, model, ratio)
	return pgerr.Wrap("budget.StoreRatio", err)
}

// StoredRatio is the ratio StoreRatio last recorded for kind and model; 0 when none is.
func StoredRatio(ctx context.Context, pool *pgxpool.Pool, kind, model string) (float64, error) {
	var k float64
	err := pool.QueryRow(ctx, `SELECT ratio FROM provider_ratios WHERE kind = $1 AND model = $2`, kind, model).Scan(&k)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return k, pgerr.Wrap("budget.StoredRatio", err)
}

// StoredRatio is the ratio stored for kind and model in the ledger's database (see
// StoredRatio); 0 when none is.
func (l *Ledger) StoredRatio(ctx context.Context, kind, model string) (float64, error) {
	return StoredRatio(ctx, l.pool, kind, model)
}

// Ratio is the learned ratio of reported to estimated tokens for model; 0 before its
// first report.
func (b *Budget) Ratio(model string) float64 {
	r := &b.ratios
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.k[model]
}
