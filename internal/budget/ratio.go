package budget

import (
	"math"
	"sync"
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

type ratios struct {
	mu sync.Mutex
	k  map[string]float64
}

// Size is what to reserve for one request of model whose input sitetools estimates at
// estimate tokens: estimate × the learned ratio × RatioMargin, or × AssumedRatio before
// the model's first report; never less than estimate.
func (b *Budget) Size(model string, estimate int64) int64 {
	k := b.Ratio(model)
	if k == 0 {
		k = AssumedRatio
	} else {
		k *= RatioMargin
	}
	return max(int64(math.Ceil(k*float64(estimate))), estimate)
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
	k, ok := r.k[model]
	if !ok || obs > k {
		r.k[model] = obs
		return
	}
	r.k[model] = k + ratioDecay*(obs-k)
}

// Ratio is the learned ratio of reported to estimated tokens for model; 0 before its
// first report.
func (b *Budget) Ratio(model string) float64 {
	r := &b.ratios
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.k[model]
}
