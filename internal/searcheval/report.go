package searcheval

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Column is the measurement of one index: the live one, or a candidate beside it.
type Column struct {
	Name  string // "live" or "candidate"
	Index string // what it searched: model and dimensions
	Note  string // what to read its figures with, e.g. a rebuild not finished
	Runs  []Run
	Cost  Cost
}

// Cost is what a column's searches cost, as the ledger recorded them.
type Cost struct {
	ProviderCalls int     `json:"providerCalls"` // made; the failed ones included
	Failed        int     `json:"failed"`        // refused, or never answered
	Tokens        int64   `json:"tokens"`
	CostUSD       float64 `json:"costUsd"`
	CacheHits     int     `json:"cacheHits"` // vectors from the cache (this process's or the shared one)
}

// Report is a run of the questions file against the live index and, with a candidate,
// against the candidate too.
type Report struct {
	File      string
	Questions []Question
	Live      Column
	Candidate *Column
}

// Degraded counts the column's searches that ran on full-text only, by reason.
func (c Column) Degraded() map[string]int {
	out := map[string]int{}
	for _, r := range c.Runs {
		if r.Degraded != "" {
			out[r.Degraded]++
		}
	}
	return out
}

// WriteText writes the report for a person: the table, the missed questions with what
// ranked instead, and the cost.
func (r Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%s: %d questions, %d results each\n", r.File, len(r.Questions), Depth)
	cols := r.columns()
	for _, c := range cols {
		line := fmt.Sprintf("%-10s %s", c.Name+":", c.Index)
		if c.Note != "" {
			line += ", " + c.Note
		}
		fmt.Fprintln(w, line)
	}
	for _, c := range cols {
		if d := c.Degraded(); len(d) > 0 {
			fmt.Fprintf(w, "warning: %d of %d searches of the %s index ran on full-text only (%s): its figures do not measure its model\n",
				sum(d), len(c.Runs), c.Name, reasons(d))
		}
	}
	fmt.Fprintln(w)
	scores := make([]Scores, len(cols))
	for i, c := range cols {
		scores[i] = ScoreRuns(c.Runs)
	}
	if r.Candidate == nil {
		writeTable(w, scores[0])
	} else {
		writeComparison(w, scores[0], scores[1])
	}
	fmt.Fprintf(w, "\nhit@1: an expected page is the first result; hit@3: one is among the first three; "+
		"MRR: the mean of 1/rank of the first expected page among the first %d (0 when absent).\n", Depth)
	for i, c := range cols {
		var other *Column
		if len(cols) == 2 {
			other = &cols[1-i]
		}
		writeMisses(w, c, other, len(cols) == 2)
	}
	fmt.Fprintln(w)
	for _, c := range cols {
		writeCost(w, c, len(cols) == 2)
	}
}

func (r Report) columns() []Column {
	if r.Candidate == nil {
		return []Column{r.Live}
	}
	return []Column{r.Live, *r.Candidate}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func reasons(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s: %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// rows are a table's rows: all, then the labels, then the languages, each with the
// score of every column.
type row struct {
	name   string
	scores []Score
}

func tableRows(cols ...Scores) []row {
	rows := []row{{name: "all"}}
	for _, s := range cols {
		rows[0].scores = append(rows[0].scores, s.All)
	}
	for _, part := range []struct {
		head string
		get  func(Scores) []Group
	}{{"label", func(s Scores) []Group { return s.Labels }}, {"language", func(s Scores) []Group { return s.Langs }}} {
		first := part.get(cols[0])
		if len(first) == 0 {
			continue
		}
		rows = append(rows, row{name: part.head})
		for i, g := range first {
			r := row{name: "  " + g.Name}
			for _, s := range cols {
				r.scores = append(r.scores, part.get(s)[i].Score)
			}
			rows = append(rows, r)
		}
	}
	return rows
}

func percent(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

func writeTable(w io.Writer, s Scores) {
	fmt.Fprintf(w, "%-22s %5s %7s %7s %6s\n", "", "n", "hit@1", "hit@3", "MRR")
	for _, r := range tableRows(s) {
		if r.scores == nil {
			fmt.Fprintln(w, r.name)
			continue
		}
		sc := r.scores[0]
		fmt.Fprintf(w, "%-22s %5d %7s %7s %6.3f\n", r.name, sc.N, percent(sc.Hit1Rate()), percent(sc.Hit3Rate()), sc.MRR())
	}
}

func writeComparison(w io.Writer, live, cand Scores) {
	head := fmt.Sprintf("%-22s %5s", "", "")
	cols := fmt.Sprintf("%-22s %5s", "", "n")
	for _, metric := range []string{"hit@1", "hit@3", "MRR"} {
		head += fmt.Sprintf("   %-23s", "        "+metric)
		cols += fmt.Sprintf("   %7s %7s %7s", "live", "cand.", "Δ")
	}
	fmt.Fprintln(w, strings.TrimRight(head, " "))
	fmt.Fprintln(w, cols)
	for _, r := range tableRows(live, cand) {
		if r.scores == nil {
			fmt.Fprintln(w, r.name)
			continue
		}
		l, c := r.scores[0], r.scores[1]
		fmt.Fprintf(w, "%-22s %5d   %7s %7s %7s   %7s %7s %7s   %7.3f %7.3f %7s\n", r.name, l.N,
			percent(l.Hit1Rate()), percent(c.Hit1Rate()), points(c.Hit1Rate()-l.Hit1Rate()),
			percent(l.Hit3Rate()), percent(c.Hit3Rate()), points(c.Hit3Rate()-l.Hit3Rate()),
			l.MRR(), c.MRR(), signed(c.MRR()-l.MRR(), 3))
	}
	fmt.Fprintf(w, "\nΔ is the candidate's figure minus the live one's (hit@1 and hit@3 in percentage points). %s\n", verdict(live.All, cand.All))
}

// points is a difference of rates in percentage points.
func points(d float64) string { return signed(100*d, 1) }

// signed formats d with a sign and prec decimals; what rounds to zero has none.
func signed(d float64, prec int) string {
	s := fmt.Sprintf("%+.*f", prec, d)
	if z := fmt.Sprintf("%.*f", prec, 0.0); s[1:] == z {
		return z
	}
	return s
}

// verdict says which index did better on the questions: by hit@3, then by MRR.
func verdict(live, cand Score) string {
	switch d := cand.Hit3 - live.Hit3; {
	case d > 0:
		return fmt.Sprintf("The candidate finds %d more of the %d questions in the first three.", d, live.N)
	case d < 0:
		return fmt.Sprintf("The candidate finds %d fewer of the %d questions in the first three.", -d, live.N)
	}
	switch d := cand.MRR() - live.MRR(); {
	case d > 0.0005:
		return "The candidate finds as many in the first three, and ranks them higher (MRR)."
	case d < -0.0005:
		return "The candidate finds as many in the first three, and ranks them lower (MRR)."
	}
	return "The candidate and the live index score the same."
}

// writeMisses lists the column's questions without an expected page in the first three,
// each with the three that ranked instead; with another column, where that one ranked it.
func writeMisses(w io.Writer, c Column, other *Column, named bool) {
	var missed []int
	for i, r := range c.Runs {
		if r.Missed() {
			missed = append(missed, i)
		}
	}
	by := ""
	if named {
		by = " by the " + c.Name + " index"
	}
	fmt.Fprintf(w, "\nMissed%s: %d of %d (no expected page among the first three)\n", by, len(missed), len(c.Runs))
	for _, i := range missed {
		r := c.Runs[i]
		fmt.Fprintf(w, "\n%s%s %s\n", r.Question.Where, tags(r.Question), r.Question.Question)
		fmt.Fprintf(w, "  expected  %s, %s\n", strings.Join(r.Question.Pages, " or "), rankText(r.Rank))
		if other != nil {
			fmt.Fprintf(w, "  %-9s %s\n", other.Name, rankText(other.Runs[i].Rank))
		}
		for j, p := range r.Ranked[:min(3, len(r.Ranked))] {
			head := ""
			if j == 0 {
				head = "instead"
			}
			fmt.Fprintf(w, "  %-9s %d. %s  %s\n", head, j+1, p.Title, p.Link())
		}
		if len(r.Ranked) == 0 {
			fmt.Fprintf(w, "  %-9s no result\n", "instead")
		}
	}
}

func tags(q Question) string {
	var t []string
	for _, s := range []string{q.Label, q.Lang} {
		if s != "" {
			t = append(t, s)
		}
	}
	if len(t) == 0 {
		return ""
	}
	return " [" + strings.Join(t, ", ") + "]"
}

func rankText(rank int) string {
	if rank == 0 {
		return fmt.Sprintf("not among the first %d", Depth)
	}
	return fmt.Sprintf("at rank %d", rank)
}

func writeCost(w io.Writer, c Column, named bool) {
	head := "Cost"
	if named {
		head += " of the " + c.Name + " index"
	}
	k := c.Cost
	fmt.Fprintf(w, "%s: %d searches; %d provider calls (%d failed), %d tokens, %.6f USD; %d query vectors from the cache.\n",
		head, len(c.Runs), k.ProviderCalls, k.Failed, k.Tokens, k.CostUSD, k.CacheHits)
}
