// Package toolstest holds stand-ins for the site's tools, for the tests of the chat:
// search_site and get_free_slots under the real tools' names, answering canned results.
package toolstest

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sitetools/sitetools/tools"
)

// Pages are what the stand-in search_site finds.
var Pages = []map[string]any{
	{"title": "Accessibility audits", "url": "https://site.example/services/accessibility/", "anchor": "what-we-test",
		"snippet": "Manual and automated testing against **WCAG** 2.2 AA.", "score": 0.9},
	{"title": "Pricing", "url": "https://site.example/pricing/", "snippet": "An **audit** costs from EUR 4,800.", "score": 0.4},
}

// StandIns records each run's span. With Barrier set, each run waits (up to 3 s) for the
// other to start, so that parallel runs overlap.
type StandIns struct {
	Barrier bool

	runs  atomic.Int64
	both  chan struct{} // closed when the second run starts
	mu    sync.Mutex
	spans map[string][2]time.Time
}

// New returns stand-ins that have not run yet.
func New() *StandIns {
	return &StandIns{both: make(chan struct{}), spans: map[string][2]time.Time{}}
}

// Tools are search_site (with the site-search capability) and get_free_slots.
func (s *StandIns) Tools() []tools.Tool {
	return []tools.Tool{{
		Name: "search_site", Title: "Search this site", Description: "Search this website's pages.",
		Capabilities: []tools.Capability{tools.CapabilitySiteSearch},
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","minLength":1,"maxLength":300},"limit":{"type":"integer","minimum":1,"maximum":20}},"required":["query"],"additionalProperties":false}`),
		Annotations:  tools.Annotations{ReadOnly: true, Idempotent: true},
		Handler: func(context.Context, json.RawMessage) (*tools.Result, error) {
			s.run("search_site")
			return tools.StructuredResult(map[string]any{"results": Pages})
		},
	}, {
		Name: "get_free_slots", Title: "Free appointment slots", Description: "Free appointment slots between two dates.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"from":{"type":"string"},"to":{"type":"string"}},"required":["from","to"],"additionalProperties":false}`),
		Annotations: tools.Annotations{ReadOnly: true, Idempotent: true},
		Handler: func(context.Context, json.RawMessage) (*tools.Result, error) {
			s.run("get_free_slots")
			return tools.StructuredResult(map[string]any{"slots": []map[string]string{{"start": "2026-03-02T09:00:00+01:00", "end": "2026-03-02T10:00:00+01:00"}}})
		},
	}}
}

func (s *StandIns) run(name string) {
	start := time.Now()
	if s.runs.Add(1) == 2 {
		close(s.both)
	}
	if s.Barrier {
		select {
		case <-s.both:
		case <-time.After(3 * time.Second):
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spans[name] = [2]time.Time{start, time.Now()}
}

// Span is when the last run of the tool name started and ended; ok is false if it
// never ran.
func (s *StandIns) Span(name string) (span [2]time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	span, ok = s.spans[name]
	return span, ok
}

// Runs is how many times the stand-ins ran.
func (s *StandIns) Runs() int64 { return s.runs.Load() }

// Overlapped reports whether search_site and get_free_slots both ran, at the same time.
func (s *StandIns) Overlapped() bool {
	a, okA := s.Span("search_site")
	b, okB := s.Span("get_free_slots")
	return okA && okB && a[0].Before(b[1]) && b[0].Before(a[1])
}
