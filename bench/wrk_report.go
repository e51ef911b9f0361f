package main

import (
	"fmt"
	"strings"
	"time"
)

// wrkStats are a pair's medians.
type wrkStats struct {
	subj, base, ratios []float64
	subjCPU, baseCPU   time.Duration // per request, median of the rounds
	ratio, cpuRatio    float64
	verdict, missed    string
}

func (p *wrkPair) stats() wrkStats {
	var s wrkStats
	var subjCPU, baseCPU []float64
	for _, r := range p.rounds {
		s.subj, s.base = append(s.subj, r.subject.rps), append(s.base, r.baseline.rps)
		s.ratios = append(s.ratios, r.subject.rps/r.baseline.rps)
		subjCPU = append(subjCPU, perRequest(r.subject))
		baseCPU = append(baseCPU, perRequest(r.baseline))
	}
	s.ratio = median(s.subj) / median(s.base)
	s.subjCPU, s.baseCPU = time.Duration(median(subjCPU)), time.Duration(median(baseCPU))
	if s.subjCPU > 0 {
		s.cpuRatio = float64(s.baseCPU) / float64(s.subjCPU)
	}
	s.verdict = "PASS"
	switch {
	case s.ratio < wrkFloor:
		s.verdict = fmt.Sprintf("MISS (below the floor %.2f by %.2f)", wrkFloor, wrkFloor-s.ratio)
		s.missed = fmt.Sprintf("%s, %s: ratio %.2f is below the floor %.2f", wrkName, p.name, s.ratio, wrkFloor)
	case s.ratio < wrkGoal:
		s.verdict = fmt.Sprintf("MISS (goal %.2f, short by %.2f; above the floor %.2f)", wrkGoal, wrkGoal-s.ratio, wrkFloor)
		s.missed = fmt.Sprintf("%s, %s: ratio %.2f misses the goal %.2f", wrkName, p.name, s.ratio, wrkGoal)
	}
	return s
}

// perRequest is a round's CPU time per request, in nanoseconds.
func perRequest(r wrkRun) float64 {
	if r.requests == 0 {
		return 0
	}
	return float64(r.cpu) / float64(r.requests)
}

func wrkText(pairs []*wrkPair) sectionResult {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n", wrkName)
	fmt.Fprintf(&b, "`wrk -t1 -c32 -d5s` (wrk is a process of its own) against the service and against a bare `net/http` "+
		"server writing the same bytes and headers, twice: in-process, and out of process as an operator runs it "+
		"(`sitetools serve` logging into a file; the bare server a process of its own). %d rounds per side, the four sides "+
		"interleaved, after one unmeasured round each. The ratio is the median of the service's rounds ÷ the median of the "+
		"bare server's; the CPU ratio is the bare server's CPU time per request ÷ the service's (medians of the rounds), "+
		"the throughput ratio the two would have on cores of their own. Goal ≥ %.2f (floor %.2f) for each.\n\n",
		wrkRounds, wrkGoal, wrkFloor)
	rows := [][]string{{"measured", "body", "sitetools rps (median)", "net/http rps (median)", "ratio", "CPU / request", "CPU ratio", "goal", "result"}}
	var missed []string
	all := make([]wrkStats, len(pairs))
	for i, p := range pairs {
		s := p.stats()
		all[i] = s
		if s.missed != "" {
			missed = append(missed, s.missed)
		}
		rows = append(rows, []string{p.name, fmt.Sprintf("%d B", p.bodyBytes), fmt.Sprintf("%.0f", median(s.subj)),
			fmt.Sprintf("%.0f", median(s.base)), fmt.Sprintf("%.2f", s.ratio),
			duration(s.subjCPU) + " / " + duration(s.baseCPU), fmt.Sprintf("%.2f", s.cpuRatio),
			fmt.Sprintf("≥ %.2f", wrkGoal), s.verdict})
	}
	table(&b, rows)
	b.WriteString("\n")
	for i, p := range pairs {
		s := all[i]
		fmt.Fprintf(&b, "- %s: %s\n", p.name, p.about)
		fmt.Fprintf(&b, "  - rps per round: sitetools %s; net/http %s; ratio per pair of rounds %s\n",
			join(s.subj, "%.0f"), join(s.base, "%.0f"), join(s.ratios, "%.2f"))
		whose := "each server's own process"
		if p.shared {
			whose = "this process, which only the side being loaded keeps busy"
		}
		fmt.Fprintf(&b, "  - CPU per request (%s): sitetools %s, net/http %s: the service spends %s more per request\n",
			whose, duration(s.subjCPU), duration(s.baseCPU), duration(s.subjCPU-s.baseCPU))
		for _, n := range p.notes {
			fmt.Fprintf(&b, "  - %s\n", n)
		}
	}
	wrkGap(&b, pairs)
	return sectionResult{text: b.String(), missed: missed}
}

// wrkGap explains why the two figures differ and what is left between the service and
// the bare server.
func wrkGap(b *strings.Builder, pairs []*wrkPair) {
	sizes := make([]string, len(pairs))
	for i, p := range pairs {
		sizes[i] = fmt.Sprintf("%d B %s", p.bodyBytes, p.name)
	}
	b.WriteString("- why the figures differ: (1) the request log. Out of process every request's line is written to a " +
		"file, in-process into a discarded writer. The service writes the lines of the requests under way together " +
		"(internal/logs: a line is handed to a goroutine that writes what has gathered once the requests ready to run " +
		"have had their turn; on an idle server at once; flushed on exit), so that under load one write system call " +
		"carries many lines instead of one per request. (2) The garbage collector. The service's heap holds what it keeps " +
		"for its life (the token vocabulary, laid out without pointers so that a collection has nothing in it to mark, " +
		"the compiled tool schemas, the bundler's cache from building the widget), and each collection marks it and " +
		"scans the service's goroutines; the bare server's heap is nearly empty. In-process both sides share one heap " +
		"and one collector, which hides this; out of process it is the service's alone. (3) Serve's own catalog is " +
		"smaller (" + strings.Join(sizes, ", ") + "), so what a request costs beyond sending its body weighs more. " +
		"What remains in both is the middleware the README promises, a few microseconds a request: formatting the log " +
		"line, two Prometheus observations, echo's routing and context (echo applies each middleware anew on every " +
		"request), the CORS, host and origin checks and the recovery. Runs on this shared two-core machine differ by " +
		"several hundredths (`BenchmarkCatalogHandler` in server/ measures the middleware alone)\n")
}
