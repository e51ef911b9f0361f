package breaker

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Status is a circuit's state for the operator, e.g. in a status endpoint's JSON.
type Status struct {
	Kind string `json:"kind"`
	// State is "closed", "open" or "half_open"; "off" for a nil Breaker.
	State string `json:"state"`
	// OpenedTotal is how often the circuit opened since the process started.
	OpenedTotal int64 `json:"openedTotal"`
	// SavedTotal is how many calls it refused since the process started.
	SavedTotal int64 `json:"callsSaved"`
	// Until is when the circuit lets (or let) a probe through; zero, and left out of
	// the JSON, when closed.
	Until time.Time `json:"until,omitzero"`
}

// State returns where the circuit stands now: an open circuit whose time is up is
// half-open. A nil Breaker is Closed.
func (b *Breaker) State() State {
	if b == nil {
		return Closed
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(b.now())
	return b.state
}

// Status returns the circuit's state and counts.
func (b *Breaker) Status() Status {
	if b == nil {
		return Status{State: "off"}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(b.now())
	s := Status{Kind: b.kind, State: b.state.String(), OpenedTotal: b.opened, SavedTotal: b.saved}
	if b.state != Closed {
		s.Until = b.until
	}
	return s
}

// metrics are one kind's series of the breaker metrics.
type metrics struct {
	state  prometheus.Gauge
	opened prometheus.Counter
	saved  prometheus.Counter
}

// newMetrics registers the breaker metrics with reg, or takes the ones a breaker of
// another kind registered there, and returns kind's series.
func newMetrics(reg prometheus.Registerer, kind string) (*metrics, error) {
	state, err := register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "sitetools_provider_breaker_state",
		Help: "The provider's circuit by kind (embedding, llm): 0 closed, 1 open (calls refused at once), 2 half_open (one probe call decides; an open circuit turns half_open at the first call after its time is up).",
	}, []string{"kind"}))
	if err != nil {
		return nil, err
	}
	opened, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sitetools_provider_breaker_opened_total",
		Help: "How often the provider's circuit opened, by kind: after failures in a row, a failed probe, or a Retry-After.",
	}, []string{"kind"}))
	if err != nil {
		return nil, err
	}
	saved, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sitetools_provider_breaker_calls_saved_total",
		Help: "Calls the provider's open circuit refused at once instead of letting them wait for a provider that is down, by kind.",
	}, []string{"kind"}))
	if err != nil {
		return nil, err
	}
	return &metrics{state: state.WithLabelValues(kind), opened: opened.WithLabelValues(kind), saved: saved.WithLabelValues(kind)}, nil
}

// register registers c with reg, or returns the equal collector registered before.
func register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(T); ok {
			return existing, nil
		}
	}
	var zero T
	return zero, err
}

func (m *metrics) setState(s State) { m.state.Set(float64(s)) }
