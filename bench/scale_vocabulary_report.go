package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// upkeepReport is the vocabulary section's markdown and its missed goal.
func upkeepReport(v *upkeepBench, meta scaleMeta) sectionResult {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", upkeepName)
	fmt.Fprintf(&b, "On the index of the search section (%s pages, %s chunks, built by %s), one page of %d chunks is written "+
		"in turn as stored and with the text of another page of another area (%d words whose count changes, of %s in the "+
		"vocabulary), in the bench process, on one connection whose PostgreSQL backend's CPU time is read from /proc: "+
		"`SiteIndex.PutPage` keeping the vocabulary of typo correction by the page's words, as a partial sync (the publish "+
		"hook) writes it, and the same write without the upkeep, as a full sync writes it; against "+
		"`SiteIndex.RebuildVocabulary`, which counts the words of every chunk, what every partial sync ran before and a full "+
		"sync still runs once at its end. %d rounds, each %d writes per side (after %d unmeasured) and one rebuild; the goal "+
		"is on the page write with the upkeep.\n\n",
		thousands(meta.pages), thousands(meta.chunks), meta.how, len(v.chunks[0]), v.words, thousands(v.vocabulary),
		upkeepRounds, upkeepWrites, upkeepWarmup)
	for _, s := range []*upkeepSide{&v.kept, &v.plain, &v.rebuild} {
		slices.Sort(s.took)
	}
	base := percentile(v.rebuild.took, 50)
	kept := percentile(v.kept.took, 50)
	pass := kept <= upkeepGoal
	rows := [][]string{{"measured", "p50", "p90", "max", "backend CPU each", "p50 ÷ rebuild p50", "goal", "result", "samples"}}
	row := func(name string, s upkeepSide, goal, result string) {
		rows = append(rows, []string{name, duration(percentile(s.took, 50)), duration(percentile(s.took, 90)), duration(s.took[len(s.took)-1]),
			v.cpuEach(s), fmt.Sprintf("%.4f", float64(percentile(s.took, 50))/float64(base)), goal, result, strconv.Itoa(len(s.took))})
	}
	row("one page written, vocabulary kept (partial sync)", v.kept, "p50 ≤ "+duration(upkeepGoal),
		verdictBy(pass, fmt.Sprintf("%.0f %% over", 100*(float64(kept)/float64(upkeepGoal)-1))))
	row("one page written, no upkeep (full sync)", v.plain, "", "")
	row("vocabulary rebuilt from every chunk (baseline)", v.rebuild, "", "")
	table(&b, rows)
	fmt.Fprintf(&b, "\nThe upkeep's own share of a page write is %s at the median (%s with it, %s without); one rebuild costs "+
		"as much as %.0f page writes that keep the vocabulary. After %d of %d rounds the vocabulary kept page by page was, row "+
		"for row, the one the rebuild then made.\n",
		duration(kept-percentile(v.plain.took, 50)), duration(kept), duration(percentile(v.plain.took, 50)),
		float64(base)/float64(kept), v.agreed, upkeepRounds)
	var missed []string
	if !pass {
		missed = append(missed, fmt.Sprintf("%s: one page written with the vocabulary's upkeep, p50 %s, goal ≤ %s", upkeepName,
			duration(kept), duration(upkeepGoal)))
	}
	if v.agreed != upkeepRounds {
		missed = append(missed, fmt.Sprintf("%s: the vocabulary kept page by page differed from the rebuild after %d of %d rounds",
			upkeepName, upkeepRounds-v.agreed, upkeepRounds))
	}
	return sectionResult{text: b.String(), missed: missed}
}

// cpuEach is the backend's CPU time per run of side, or "–" when it is not known.
func (v *upkeepBench) cpuEach(s upkeepSide) string {
	if v.backend == 0 || len(s.took) == 0 {
		return "–"
	}
	return duration(s.cpu / time.Duration(len(s.took)))
}
