package sitesearch_test

import (
	"strings"
	"testing"

	"github.com/sitetools/sitetools/tools/sitesearch"
)

// TestInstantSearch: search_site's as-you-type mode finds pages from the start of the
// word being typed, after every keystroke, with no provider call at all; the full search
// on Enter makes one, and its repeat none.
func TestInstantSearch(t *testing.T) {
	e := newSearchEnv(t, envOptions{})
	before := e.fake.Calls()
	typed := "accessibility audit price"
	tops := map[string]string{} // the first three pages' urls

	for i := 2; i <= len(typed); i++ {
		q := typed[:i]
		r := e.call(t, "search_site", map[string]any{"query": q, "mode": "instant", "limit": 5})
		if r.status != 200 || r.out.Degraded != "" {
			t.Fatalf("%q: status %d degraded %q: %s", q, r.status, r.out.Degraded, r.body)
		}
		for _, h := range r.out.Results[:min(3, len(r.out.Results))] {
			tops[q] += h.URL + " "
		}
	}
	if n := e.fake.Calls() - before; n != 0 {
		t.Fatalf("%d provider calls while typing %d keystrokes, want 0", n, len(typed)-1)
	}
	// The start of a word is enough: "accessib" is no word of the site.
	for q, want := range map[string]string{
		"accessib": "/services/accessibility-audits", "accessibility": "/services/accessibility-audits",
		"accessibility au": "/services/accessibility-audits", "accessibility audit": "/services/accessibility-audits",
		// Each word narrows: the page with the audits' prices.
		"accessibility audit pric": "/pricing", "accessibility audit price": "/pricing",
	} {
		if !strings.Contains(tops[q], want) {
			t.Errorf("%q: first three %q, want %s among them", q, tops[q], want)
		}
	}
	// Enter: the full search, with its one provider call; again: from the cache.
	for range 2 {
		if r := e.search(t, typed); r.status != 200 || len(r.out.Results) == 0 || !strings.Contains(string(r.body), "/services/accessibility-audits") {
			t.Fatalf("full search: %d %s", r.status, r.body)
		}
	}
	if n := e.fake.Calls() - before; n != 1 {
		t.Fatalf("%d provider calls after the full search and its repeat, want 1", n)
	}
	// A German word being typed, and one with no page: no error, no call.
	if r := e.call(t, "search_site", map[string]any{"query": "Barrierefrei", "mode": "instant"}); r.status != 200 || len(r.out.Results) == 0 {
		t.Errorf("German prefix: %d %s", r.status, r.body)
	}
	if r := e.call(t, "search_site", map[string]any{"query": "zzqx", "mode": "instant"}); r.status != 200 || len(r.out.Results) != 0 {
		t.Errorf("no such word: %d %s", r.status, r.body)
	}
	if r := e.call(t, "search_site", map[string]any{"query": "audit", "mode": "sometimes"}); r.status != 400 || r.errCode != "invalid_arguments" {
		t.Errorf("an unknown mode: %d %s", r.status, r.body)
	}
	if n := e.fake.Calls() - before; n != 1 {
		t.Fatalf("%d provider calls, want still 1", n)
	}
}

// TestIsInstant: the rate limit's view of a call's arguments, before they are validated.
func TestIsInstant(t *testing.T) {
	for args, want := range map[string]bool{
		`{"query":"a","mode":"instant"}`: true,
		`{"query":"a","mode":"full"}`:    false,
		`{"query":"a"}`:                  false,
		`{"mode":["instant"]}`:           false,
		`not json`:                       false,
	} {
		if got := sitesearch.IsInstant([]byte(args)); got != want {
			t.Errorf("IsInstant(%s) = %v, want %v", args, got, want)
		}
	}
}
