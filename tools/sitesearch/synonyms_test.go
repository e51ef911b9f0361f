package sitesearch

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseSynonyms(t *testing.T) {
	s, err := ParseSynonyms(strings.NewReader(`
# pricing
price, cost, fee, Day Rate
cheap, affordable => price   # one-way

[de]
preis, kosten, honorar
[*]
imprint, legal notice
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		query, lang string
		want        []string
	}{
		{"What is your day rate?", "", []string{"price", "cost", "fee"}},
		{"how much does it COST", "en", []string{"price", "fee", "day rate"}},
		{"something cheap", "", []string{"price"}},
		{"price list", "", []string{"cost", "fee", "day rate"}}, // one-way: price does not add cheap
		{"Was kostet ein Audit? Preis", "de", []string{"kosten", "honorar"}},
		{"Preis", "en", nil}, // a [de] group is not applied to an English query
		{"Preis", "", []string{"kosten", "honorar"}},
		{"legal notice", "de-AT", []string{"imprint"}},
		{"nothing to see", "", nil},
	} {
		if diff := cmp.Diff(tc.want, s.Expand(tc.query, tc.lang)); diff != "" {
			t.Errorf("Expand(%q, %q) (-want +got):\n%s", tc.query, tc.lang, diff)
		}
	}
	var none *Synonyms
	if got := none.Expand("price", ""); got != nil {
		t.Errorf("nil synonyms expanded to %v", got)
	}
}

func TestParseSynonymsErrorsNameTheirLines(t *testing.T) {
	_, err := ParseSynonyms(strings.NewReader("price, cost\nlonely\n[en\na, , b\n[xx yy]\na => b => c\none two three four five, six\n=> price\n"))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"line 2: a group needs at least two terms", "line 3: a section", "line 4: an empty term",
		"line 5: a section", "line 6: a line has at most one", "line 7: the term", "line 8: an empty term"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "line 1:") {
		t.Errorf("a good line was reported:\n%v", err)
	}
}

func TestClosest(t *testing.T) {
	cands := []Candidate{{"piece", 3, 0.3}, {"price", 9, 0.2}, {"prize", 1, 0.25}}
	if got, ok := closest("pirce", cands); !ok || got != "piece" {
		// piece is one substitution away, as price is one swap: the likelier spelling wins.
		t.Errorf("closest(pirce) = %q, %v", got, ok)
	}
	if got, ok := closest("pirce", []Candidate{{"price", 9, 0.2}, {"prize", 1, 0.2}}); !ok || got != "price" {
		t.Errorf("closest(pirce) = %q, %v; want the commoner word", got, ok)
	}
	if _, ok := closest("zzzz", []Candidate{{"pizza", 4, 0.1}}); ok {
		t.Error("a word three edits away from a four-letter word was taken")
	}
	if got := applyCorrections("Acessibility audit, pirce?", map[string]string{"acessibility": "accessibility", "pirce": "price"}); got != "accessibility audit, price" {
		t.Errorf("applyCorrections = %q", got)
	}
}
