package llm

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

func newLocal(t testing.TB, dims int) *Local {
	t.Helper()
	l, err := NewLocal(dims)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func embedOne(t testing.TB, e Embedder, text string) []float32 {
	t.Helper()
	got, err := e.Embed(context.Background(), []string{text})
	if err != nil {
		t.Fatal(err)
	}
	return got.Vectors[0]
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}

func TestNewLocalDimensions(t *testing.T) {
	for _, tc := range []struct {
		dims    int
		wantErr bool
	}{
		{dims: -1, wantErr: true},
		{dims: 0, wantErr: true},
		{dims: MinLocalDimensions - 1, wantErr: true},
		{dims: MinLocalDimensions},
		{dims: 384},
		{dims: MaxLocalDimensions},
		{dims: MaxLocalDimensions + 1, wantErr: true},
	} {
		t.Run("", func(t *testing.T) {
			l, err := NewLocal(tc.dims)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("NewLocal(%d): no error", tc.dims)
				}
				return
			}
			if err != nil {
				t.Fatalf("NewLocal(%d): %v", tc.dims, err)
			}
			if l.Dimensions() != tc.dims || l.Model() != "local-lexical-v1" {
				t.Errorf("got %q with %d dimensions, want local-lexical-v1 with %d", l.Model(), l.Dimensions(), tc.dims)
			}
			if v := embedOne(t, l, "a text"); len(v) != tc.dims {
				t.Errorf("vector has %d dimensions, want %d", len(v), tc.dims)
			}
		})
	}
}

// The vector of a text is pinned: hashing that varied between processes (maphash, map
// order in the sums) would break every stored index at the next restart. Changing the
// algorithm on purpose means changing LocalModel and these numbers.
func TestLocalGolden(t *testing.T) {
	want := []float32{-0.3944965, 0.1577986, 0.2366979, -0.1577986, -0.5522951, -0.1577986, -0.1577986,
		0.0788993, 0.0788993, -0.03155972, -0.20513818, -0.3629368, 0, 0.1577986, -0.12623888, -0.3944965}
	got := embedOne(t, newLocal(t, 16), "Barrierefreie Websites: accessibility audits für Behörden")
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-6)); diff != "" {
		t.Errorf("vector changed (-want +got):\n%s", diff)
	}
}

func TestLocalDeterministic(t *testing.T) {
	texts := []string{
		"Accessibility audits for public-sector websites",
		"Wir prüfen Ihre Website auf Barrierefreiheit nach WCAG 2.2 und BITV.",
		strings.Repeat("cloud cost review kubernetes rightsizing ", 50),
	}
	a, err := newLocal(t, 256).Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	l := newLocal(t, 256)
	for range 3 { // the same instance again, with its scratch memory reused
		b, err := l.Embed(context.Background(), texts)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(a, b); diff != "" {
			t.Fatalf("vectors differ between runs (-first +again):\n%s", diff)
		}
	}
}

func TestLocalConcurrent(t *testing.T) {
	l := newLocal(t, 128)
	texts := []string{"privacy policy", "day rate and discounts", "Datenschutzerklärung", "tram stop near the office"}
	want, err := l.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]*Embeddings, 16)
	errs := make([]error, len(results))
	for i := range results {
		wg.Go(func() { results[i], errs[i] = l.Embed(context.Background(), texts) })
	}
	wg.Wait()
	for i := range results {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if diff := cmp.Diff(want, results[i]); diff != "" {
			t.Fatalf("concurrent result %d differs (-want +got):\n%s", i, diff)
		}
	}
}

func TestLocalNormalised(t *testing.T) {
	e1 := make([]float32, 64)
	e1[0] = 1
	for _, tc := range []struct {
		text string
		want []float32 // nil: any unit vector but e1
	}{
		{text: "Accessibility audits"},
		{text: "Größenänderung über Übergänge: ÄÖÜ äöü ß"},
		{text: "日本語のテキストと中文文本"},
		{text: "u\u0308ber"}, // decomposed ü
		{text: strings.Repeat("word ", 2000)},
		{text: "the of and"},   // only stop words
		{text: "wer sind wir"}, // only stop words, German
		{text: "a"},
		{text: "x"},
		{text: "\xff\xfe invalid utf-8 \xc3"},
		{text: "", want: e1},
		{text: "  \n\t ", want: e1},
		{text: "!!! --- ???", want: e1},
	} {
		t.Run("", func(t *testing.T) {
			v := embedOne(t, newLocal(t, 64), tc.text)
			var sum float64
			for _, x := range v {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					t.Fatalf("%q: component %v", tc.text, x)
				}
				sum += float64(x) * float64(x)
			}
			if math.Abs(sum-1) > 1e-5 {
				t.Errorf("%q: squared norm %v, want 1", tc.text, sum)
			}
			if tc.want != nil {
				if diff := cmp.Diff(tc.want, v); diff != "" {
					t.Errorf("%q (-want +got):\n%s", tc.text, diff)
				}
			} else if cmp.Equal(e1, v) {
				t.Errorf("%q: got the no-words vector", tc.text)
			}
		})
	}
}

func TestLocalSimilarity(t *testing.T) {
	for _, tc := range []struct {
		query, related, unrelated string
	}{
		// shared trigrams: related forms of a word meet
		{"accessibility", "accessible", "available"},
		{"accessibility audit", "We audit websites for accessible design.", "Our cloud cost review cuts your AWS bill."},
		{"Datenschutz Beratung", "Wir bieten Beratung zum Datenschutz an.", "Barrierefreiheit für Behörden"},
		{"pricing", "Our prices and day rates", "Meet the team"},
		// stop words do not dominate: the unrelated text shares all of them
		{"What is the price?", "Our price list", "What is the way to the station?"},
		{"Wie ist der Preis?", "Unsere Preisliste", "Wie ist der Weg zum Bahnhof?"},
		// word pairs add to single words
		{"privacy policy", "Read our privacy policy.", "The policy on privacy of data."},
	} {
		t.Run("", func(t *testing.T) {
			l := newLocal(t, 384)
			q := embedOne(t, l, tc.query)
			rel, unrel := cosine(q, embedOne(t, l, tc.related)), cosine(q, embedOne(t, l, tc.unrelated))
			if rel <= unrel {
				t.Errorf("%q: related %q scored %.3f, not above unrelated %q at %.3f",
					tc.query, tc.related, rel, tc.unrelated, unrel)
			}
		})
	}
}

// Sublinear tf: a word said twenty times does not drown one said once (with a linear tf
// the cosine below is about 0.05; with 1+ln tf about 0.23).
func TestLocalSublinearTF(t *testing.T) {
	l := newLocal(t, 384)
	doc := embedOne(t, l, strings.Repeat("cookies ", 20)+"privacy")
	if c := cosine(doc, embedOne(t, l, "privacy")); c < 0.15 {
		t.Errorf("cosine of the once-said word %.3f, want at least 0.15", c)
	}
}

func TestLocalCaseInsensitive(t *testing.T) {
	l := newLocal(t, 128)
	if diff := cmp.Diff(embedOne(t, l, "Über uns: PRIVACY Policy"), embedOne(t, l, "über UNS privacy policy")); diff != "" {
		t.Errorf("case or punctuation changed the vector (-a +b):\n%s", diff)
	}
}

func TestLocalFeatures(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{text: "abc", want: []string{"uabc", "t#ab", "tabc", "tbc#"}},
		{text: "Für", want: []string{"ufür", "t#fü", "tfür", "tür#"}},
		{text: "the a", want: []string{"uthe", "t#th", "tthe", "the#", "ua", "t#a#", "bthe a"}},
		{text: "Privacy, the policy", want: []string{
			"uprivacy", "t#pr", "tpri", "triv", "tiva", "tvac", "tacy", "tcy#",
			"upolicy", "bprivacy policy", "t#po", "tpol", "toli", "tlic", "ticy", "tcy#",
		}},
		{text: strings.Repeat("z", maxTrigramWordRunes+1), want: []string{"u" + strings.Repeat("z", maxTrigramWordRunes+1)}},
	} {
		t.Run("", func(t *testing.T) {
			l := newLocal(t, 32)
			s := l.pool.New().(*localScratch)
			var got []string
			s.trace = func(key []byte) { got = append(got, string(key)) }
			l.vectorWith(s, tc.text)
			if diff := cmp.Diff(tc.want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("%q features (-want +got):\n%s", tc.text, diff)
			}
		})
	}
}

func TestLocalTokens(t *testing.T) {
	texts := []string{"hello world", "Datenschutzerklärung", ""}
	got, err := newLocal(t, 32).Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	want := CountTokens(texts[0]) + CountTokens(texts[1])
	if got.Tokens != want || want == 0 {
		t.Errorf("tokens %d, want %d (sum of CountTokens)", got.Tokens, want)
	}
	if len(got.Vectors) != len(texts) {
		t.Errorf("%d vectors for %d texts", len(got.Vectors), len(texts))
	}
}

func TestLocalCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := newLocal(t, 32).Embed(ctx, []string{"text"}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// chunk500 is a 500-word text of the kind ingestion embeds.
var chunk500 = func() string {
	words := strings.Fields(`Our accessibility audits check public websites against WCAG 2.2 and the
		German BITV. We test with screen readers, keyboard only navigation and zoom, report every
		barrier with its success criterion, and help your developers fix them. Datenschutz und
		Barrierefreiheit gehören für uns zusammen: wir prüfen Formulare, Kontraste und Alternativtexte.`)
	var b strings.Builder
	for i := range 500 {
		b.WriteString(words[(i*7)%len(words)])
		b.WriteByte(' ')
	}
	return b.String()
}()

// BenchmarkLocalVector is the vector alone; BenchmarkLocalEmbed adds the token count
// and BenchmarkCountTokens is that count alone, so the three read as a ratio.
func BenchmarkLocalVector(b *testing.B) {
	l := newLocal(b, 384)
	b.SetBytes(int64(len(chunk500)))
	for b.Loop() {
		l.vector(chunk500)
	}
}

func BenchmarkLocalEmbed(b *testing.B) {
	l := newLocal(b, 384)
	texts := []string{chunk500}
	b.SetBytes(int64(len(chunk500)))
	for b.Loop() {
		if _, err := l.Embed(context.Background(), texts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCountTokens(b *testing.B) {
	CountTokens("warm up")
	b.SetBytes(int64(len(chunk500)))
	for b.Loop() {
		CountTokens(chunk500)
	}
}

func BenchmarkLocalEmbedQuery(b *testing.B) {
	l := newLocal(b, 384)
	texts := []string{"How do I merge rankings from full-text search and embedding similarity?"}
	CountTokens("warm up")
	for b.Loop() {
		if _, err := l.Embed(context.Background(), texts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoadTokenizer(b *testing.B) {
	for b.Loop() {
		if _, err := tiktokenloader.NewOfflineLoader().LoadTiktokenBpe("cl100k_base.tiktoken"); err != nil {
			b.Fatal(err)
		}
	}
}
