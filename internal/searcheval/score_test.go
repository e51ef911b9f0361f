package searcheval_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/sitetools/sitetools/internal/searcheval"
)

// ranked is a fixed search: each question's results, by question.
type ranked map[string][]string

func (r ranked) search(_ context.Context, q searcheval.Question, limit int) ([]searcheval.Page, string, error) {
	var out []searcheval.Page
	for _, u := range r[q.Question] {
		out = append(out, searcheval.Page{Title: "T" + u, URL: "https://example.com" + u})
	}
	return out[:min(limit, len(out))], "", nil
}

var scoreQuestions = []searcheval.Question{
	{Question: "a", Pages: []string{"/a"}, Lang: "en", Label: "k", Where: "line 1"},
	{Question: "b", Pages: []string{"/b/", "/x"}, Lang: "en", Label: "p", Where: "line 2"},
	{Question: "c", Pages: []string{"/c"}, Lang: "de", Label: "p", Where: "line 3"},
	{Question: "d", Pages: []string{"/d"}, Where: "line 4"},
}

// live ranks a first, b's second page third, c fifth and d nowhere.
var live = ranked{
	"a": {"/a", "/b", "/c"},
	"b": {"/q", "/r", "/x", "/b"},
	"c": {"/q", "/r", "/s", "/t", "/c"},
	"d": {"/q", "/r", "/s"},
}

func TestScores(t *testing.T) {
	runs, err := searcheval.Evaluate(context.Background(), scoreQuestions, live.search)
	if err != nil {
		t.Fatal(err)
	}
	var ranks []int
	for _, r := range runs {
		ranks = append(ranks, r.Rank)
	}
	if want := []int{1, 3, 5, 0}; !equal(ranks, want) {
		t.Fatalf("ranks %v, want %v", ranks, want)
	}
	s := searcheval.ScoreRuns(runs)
	check := func(name string, got searcheval.Score, n, h1, h3 int, mrr float64) {
		t.Helper()
		if got.N != n || got.Hit1 != h1 || got.Hit3 != h3 || math.Abs(got.MRR()-mrr) > 1e-12 {
			t.Errorf("%s: %+v (MRR %v), want n %d, hit@1 %d, hit@3 %d, MRR %v", name, got, got.MRR(), n, h1, h3, mrr)
		}
	}
	check("all", s.All, 4, 1, 2, (1+1.0/3+1.0/5)/4)
	if len(s.Labels) != 2 || len(s.Langs) != 3 {
		t.Fatalf("labels %+v, langs %+v", s.Labels, s.Langs)
	}
	check("label k", s.Labels[0].Score, 1, 1, 1, 1)
	check("label p", s.Labels[1].Score, 2, 0, 1, (1.0/3+1.0/5)/2)
	if s.Langs[0].Name != searcheval.NoLang || s.Langs[1].Name != "de" || s.Langs[2].Name != "en" {
		t.Errorf("languages %+v", s.Langs)
	}
	check("lang en", s.Langs[2].Score, 2, 1, 2, (1+1.0/3)/2)
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestReport: the text lists the misses with what ranked instead and, with a candidate,
// where it ranked them; the JSON carries the same figures and the difference.
func TestReport(t *testing.T) {
	ctx := context.Background()
	liveRuns, _ := searcheval.Evaluate(ctx, scoreQuestions, live.search)
	better := ranked{"a": {"/a"}, "b": {"/b"}, "c": {"/c"}, "d": {"/q", "/d"}}
	candRuns, _ := searcheval.Evaluate(ctx, scoreQuestions, better.search)
	r := searcheval.Report{File: "q.yaml", Questions: scoreQuestions,
		Live:      searcheval.Column{Name: "live", Index: "m1 (3 dimensions)", Runs: liveRuns, Cost: searcheval.Cost{ProviderCalls: 4, Tokens: 9}},
		Candidate: &searcheval.Column{Name: "candidate", Index: "m2 (5 dimensions)", Runs: candRuns}}
	var text bytes.Buffer
	r.WriteText(&text)
	for _, want := range []string{
		"candidate: m2 (5 dimensions)",
		"line 3 [p, de] c\n  expected  /c, at rank 5\n  candidate at rank 1\n  instead   1. T/q  https://example.com/q\n            2. T/r  https://example.com/r\n            3. T/s  https://example.com/s\n",
		"line 4 d\n  expected  /d, not among the first 10\n  candidate at rank 2\n",
		"Missed by the candidate index: 0 of 4",
		"The candidate finds 2 more of the 4 questions in the first three.",
		"Cost of the live index: 4 searches; 4 provider calls (0 failed), 9 tokens",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Live       struct{ All struct{ Hit3 float64 } }
		Difference struct{ All struct{ Found3 int } }
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil || doc.Live.All.Hit3 != 0.5 || doc.Difference.All.Found3 != 2 {
		t.Errorf("JSON %v: %s", err, js.String())
	}
}

func TestEvaluateNamesTheEntry(t *testing.T) {
	refuse := func(context.Context, searcheval.Question, int) ([]searcheval.Page, string, error) {
		return nil, "", &searcheval.Refused{Reason: "too long"}
	}
	_, err := searcheval.Evaluate(context.Background(), scoreQuestions[2:], refuse)
	if _, ok := errors.AsType[*searcheval.Refused](err); !ok || !strings.HasPrefix(err.Error(), "line 3: the search refuses the question: too long") {
		t.Fatalf("err %v", err)
	}
}
