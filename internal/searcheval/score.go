package searcheval

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
)

// Depth is how many results each question asks for: MRR counts the first expected page
// down to this rank.
const Depth = 10

// Page is a result as the search ranked it.
type Page struct {
	Title string `json:"title"`
	URL   string `json:"url"`
	// Anchor is the part of the page the search found (a section, or a PDF's "page=N");
	// a page is told by its URL alone.
	Anchor string `json:"anchor,omitempty"`
}

// Link is the page's URL, with the PDF page a search found in it ("#page=N").
func (p Page) Link() string {
	if strings.HasPrefix(p.Anchor, "page=") {
		return p.URL + "#" + p.Anchor
	}
	return p.URL
}

// Searcher runs one question through the site's search and returns up to limit pages,
// best first, and why it ran on full-text only ("" when it did not).
type Searcher func(ctx context.Context, q Question, limit int) (pages []Page, degraded string, err error)

// Run is one question's search: what ranked, and the rank of the first expected page
// (1-based; 0 when none is among the Depth results).
type Run struct {
	Question Question
	Ranked   []Page
	Rank     int
	Degraded string
}

// Refused is a question the search refuses (too long, say): a problem of the file.
type Refused struct{ Reason string }

func (e *Refused) Error() string { return "the search refuses the question: " + e.Reason }

// Missed reports whether no expected page is among the first three results.
func (r Run) Missed() bool { return r.Rank == 0 || r.Rank > 3 }

// Evaluate runs every question through search, one after another, in the file's order.
func Evaluate(ctx context.Context, qs []Question, search Searcher) ([]Run, error) {
	runs := make([]Run, 0, len(qs))
	for _, q := range qs {
		pages, degraded, err := search(ctx, q, Depth)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", q.Where, err)
		}
		runs = append(runs, Rank(q, pages, degraded))
	}
	return runs, nil
}

// Rank finds the first of q's pages among pages, by path (PagePath).
func Rank(q Question, pages []Page, degraded string) Run {
	run := Run{Question: q, Ranked: pages, Degraded: degraded}
	want := make([]string, len(q.Pages))
	for i, p := range q.Pages {
		want[i] = PagePath(p)
	}
	for i, p := range pages {
		if slices.Contains(want, PagePath(p.URL)) {
			run.Rank = i + 1
			break
		}
	}
	return run
}

// Score sums the ranks of a set of questions.
type Score struct {
	N          int     // questions
	Hit1, Hit3 int     // with an expected page first, among the first three
	Reciprocal float64 // the sum of 1/rank (0 for a question without an expected page)
}

// Add counts one question whose first expected page ranked rank (0: absent).
func (s *Score) Add(rank int) {
	s.N++
	if rank == 1 {
		s.Hit1++
	}
	if rank >= 1 && rank <= 3 {
		s.Hit3++
	}
	if rank > 0 {
		s.Reciprocal += 1 / float64(rank)
	}
}

func rate(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// Hit1Rate is the share of questions with an expected page first.
func (s Score) Hit1Rate() float64 { return rate(s.Hit1, s.N) }

// Hit3Rate is the share of questions with an expected page among the first three.
func (s Score) Hit3Rate() float64 { return rate(s.Hit3, s.N) }

// MRR is the mean reciprocal rank of the first expected page.
func (s Score) MRR() float64 {
	if s.N == 0 {
		return 0
	}
	return s.Reciprocal / float64(s.N)
}

// Group is the score of the questions of one label or one language.
type Group struct {
	Name string
	Score
}

// NoLang names the questions whose language the file does not give.
const NoLang = "(not given)"

// Scores are a set of runs' scores: over all questions, per label (questions without one
// are in no label's), and per language.
type Scores struct {
	All    Score
	Labels []Group // by name
	Langs  []Group // by name
}

// ScoreRuns sums runs.
func ScoreRuns(runs []Run) Scores {
	var s Scores
	labels, langs := map[string]*Score{}, map[string]*Score{}
	add := func(m map[string]*Score, name string, rank int) {
		if m[name] == nil {
			m[name] = &Score{}
		}
		m[name].Add(rank)
	}
	for _, r := range runs {
		s.All.Add(r.Rank)
		if r.Question.Label != "" {
			add(labels, r.Question.Label, r.Rank)
		}
		add(langs, cmp.Or(r.Question.Lang, NoLang), r.Rank)
	}
	s.Labels, s.Langs = groups(labels), groups(langs)
	return s
}

func groups(m map[string]*Score) []Group {
	out := make([]Group, 0, len(m))
	for name, s := range m {
		out = append(out, Group{Name: name, Score: *s})
	}
	slices.SortFunc(out, func(a, b Group) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// PageLookup reports whether the index holds a page, named by path or URL.
type PageLookup func(ctx context.Context, page string) (bool, error)

// CheckPages returns a *FileError naming every page of the questions that the index does
// not hold: a typo there would count as a miss on every run.
func CheckPages(ctx context.Context, name string, qs []Question, has PageLookup) error {
	known := map[string]bool{}
	var problems []string
	for _, q := range qs {
		for _, p := range q.Pages {
			ok, seen := known[p]
			if !seen {
				var err error
				if ok, err = has(ctx, p); err != nil {
					return err
				}
				known[p] = ok
			}
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: page %s is not in the index (a typo, or a page not ingested yet?)", q.Where, p))
			}
		}
	}
	if len(problems) > 0 {
		return &FileError{Name: name, Problems: problems}
	}
	return nil
}
