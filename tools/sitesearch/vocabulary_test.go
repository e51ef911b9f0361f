package sitesearch_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// TestTyposAreCorrected: a query word the site does not have is searched as the indexed
// word it most likely meant, the result says so, each result says which legs matched,
// and none of it costs a provider call beyond the query's one embedding.
func TestTyposAreCorrected(t *testing.T) {
	e := newSearchEnv(t, envOptions{})
	before := e.fake.Calls()
	r := e.search(t, "acessibility audti")
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if diff := cmp.Diff(map[string]string{"acessibility": "accessibility", "audti": "audit"}, r.out.Corrected); diff != "" {
		t.Errorf("corrected (-want +got):\n%s\n%s", diff, r.body)
	}
	if len(r.out.Results) == 0 || !strings.Contains(r.out.Results[0].URL, "accessibility") {
		t.Fatalf("results %s", r.body)
	}
	if m := r.out.Results[0].Matched; !slices.Contains(m, "corrected") || !slices.Contains(m, "vector") {
		t.Errorf("top result matched %v, want corrected and vector", m)
	}
	if n := e.fake.Calls() - before; n != 1 {
		t.Errorf("%d provider calls, want the query's one", n)
	}
	// Words the site has are left alone, as are short words and numbers.
	r = e.search(t, "WCAG audit 2024 for app")
	if len(r.out.Corrected) != 0 {
		t.Errorf("corrected %v", r.out.Corrected)
	}
	if m := r.out.Results[0].Matched; !slices.Contains(m, "fulltext") || slices.Contains(m, "corrected") {
		t.Errorf("top result matched %v", m)
	}
}

// TestSynonymsWidenTheQuery: with a synonyms file, a query in a visitor's words also
// finds the site's own, the result says the synonym matched, and the expansion costs no
// provider call beyond the query's one embedding.
func TestSynonymsWidenTheQuery(t *testing.T) {
	file := filepath.Join(t.TempDir(), "synonyms.txt")
	if err := os.WriteFile(file, []byte("[en]\nbarrierefrei, handicapped => accessibility\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plain := newSearchEnv(t, envOptions{})
	e := newSearchEnv(t, envOptions{synonyms: file})
	before := e.fake.Calls()
	r := e.search(t, "handicapped")
	if n := e.fake.Calls() - before; n != 1 {
		t.Errorf("%d provider calls, want the query's one", n)
	}
	if len(r.out.Results) == 0 || !slices.Contains(r.out.Results[0].Matched, "synonym") {
		t.Fatalf("results %s", r.body)
	}
	if !strings.Contains(r.out.Results[0].URL, "accessibility") {
		t.Errorf("top result %s", r.out.Results[0].URL)
	}
	for _, h := range plain.search(t, "handicapped").out.Results {
		if slices.Contains(h.Matched, "synonym") || slices.Contains(h.Matched, "fulltext") {
			t.Errorf("without synonyms, %s matched %v", h.URL, h.Matched)
		}
	}
}

// TestAccentsDoNotDecide: a query typed without accents finds the page's accented words
// in the full-text leg ("Umea" for "Umeå"), and is not "corrected".
func TestAccentsDoNotDecide(t *testing.T) {
	e := newSearchEnv(t, envOptions{})
	r := e.search(t, "Umea")
	i := slices.IndexFunc(r.out.Results, func(h sitesearch.Hit) bool { return strings.HasSuffix(h.URL, "/team/mara-lindqvist") })
	if i < 0 || !slices.Contains(r.out.Results[i].Matched, "fulltext") || !strings.Contains(r.out.Results[i].Snippet, "**Umeå**") {
		t.Fatalf("the page with Umeå is not a full-text match: %s", r.body)
	}
	if len(r.out.Corrected) != 0 {
		t.Errorf("corrected %v", r.out.Corrected)
	}
}
