package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// vectors is how many of the burst's answers had the query's vector.
func (r flightResult) vectors() int {
	n := 0
	for _, a := range r.answers {
		if a.vector {
			n++
		}
	}
	return n
}

// flightSummary is one number of replicas over its bursts.
type flightSummary struct {
	replicas         int
	calls            []int // per burst, sorted
	vectors, answers int
	all              []time.Duration // every answer's latency, sorted
	fetcher, waiter  []time.Duration // on the replica that called the provider, on the others
	cached           []time.Duration // the same bursts repeated, their vector cached
}

func summarizeFlight(replicas int, results []flightResult) flightSummary {
	s := flightSummary{replicas: replicas}
	for _, r := range results {
		s.calls = append(s.calls, r.calls)
		s.vectors += r.vectors()
		s.answers += len(r.answers)
		for _, a := range r.cached {
			s.cached = append(s.cached, a.latency)
		}
		for _, a := range r.answers {
			s.all = append(s.all, a.latency)
			if r.fetchers[a.replica] {
				s.fetcher = append(s.fetcher, a.latency)
			} else {
				s.waiter = append(s.waiter, a.latency)
			}
		}
	}
	slices.Sort(s.calls)
	for _, d := range [][]time.Duration{s.all, s.fetcher, s.waiter, s.cached} {
		slices.Sort(d)
	}
	return s
}

// exactlyOne counts the bursts that cost one provider call.
func (s flightSummary) exactlyOne() int {
	n := 0
	for _, c := range s.calls {
		if c == 1 {
			n++
		}
	}
	return n
}

// flightReport is the section: the method, the table, and the goal's verdict.
func flightReport(results [][]flightResult) sectionResult {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", flightName)
	fmt.Fprintf(&b, "%d replicas, each built by app.Build as `sitetools serve` builds it, with a pool, a metrics registry "+
		"and an HTTP server on loopback of its own, in this process, on one database (`%s`: the demo site ingested "+
		"through the provider below, and its shared cache of query vectors emptied at the start of the run), with both "+
		"daily budgets on (EMBEDDINGS_DAILY_TOKEN_BUDGET and LLM_DAILY_TOKEN_BUDGET %s tokens). The embedding provider "+
		"is llmtest.Server in this process (EMBEDDINGS_PROVIDER=openai, model %s, %d dimensions), which counts every "+
		"request on arrival and answers each %s after it. A burst is %d search_site calls for one query never asked "+
		"before in the run, sent at once (POST /api/chat/tools), spread evenly over the replicas; what it cost is the "+
		"provider's requests counted from before it to after its last answer. %d bursts over %d replicas alternate "+
		"with %d on one replica, where only the in-process single-flight is at work. An answer's latency runs from "+
		"the burst's start to its body's end, the provider's %s included; the replica that called the provider is "+
		"the one whose sitetools_embedding_queries_total{source=\"provider\"} rose, and the others waited for its "+
		"answer in the shared cache. Each burst is then sent again as it was, its vector now cached: what the %d "+
		"searches at once take without the provider and the single-flight.\n\n",
		flightReplicas, flightDatabase, thousands(ttftDailyBudget), flightModel, flightDims, duration(flightDelay),
		flightBurst, flightRounds, flightReplicas, flightRounds, duration(flightDelay), flightBurst)
	rows := [][]string{{"replicas", "bursts", "provider calls per burst (min / median / max)", "answers with the vector",
		"answer p50", "answer p95", "p50 on the replica that called", "p50 on the others", "repeated, cached: p50"}}
	sums := make([]flightSummary, len(flightSetups))
	for i, n := range flightSetups {
		s := summarizeFlight(n, results[i])
		sums[i] = s
		others := "–"
		if len(s.waiter) > 0 {
			others = duration(percentile(s.waiter, 50))
		}
		rows = append(rows, []string{fmt.Sprint(n), fmt.Sprint(len(s.calls)),
			fmt.Sprintf("%d / %d / %d", s.calls[0], s.calls[len(s.calls)/2], s.calls[len(s.calls)-1]),
			fmt.Sprintf("%d / %d", s.vectors, s.answers), duration(percentile(s.all, 50)), duration(percentile(s.all, 95)),
			duration(percentile(s.fetcher, 50)), others, duration(percentile(s.cached, 50))})
	}
	table(&b, rows)
	b.WriteString("\n")
	var missed []string
	for _, s := range sums {
		beyond := percentile(s.all, 50) - flightDelay - percentile(s.cached, 50)
		fmt.Fprintf(&b, "- %s: p50 %s − the provider's %s − the cached burst's p50 %s = %s, what fetching the "+
			"vector once and sharing it adds to the searches.\n", replicas(s.replicas), duration(percentile(s.all, 50)),
			duration(flightDelay), duration(percentile(s.cached, 50)), signed(beyond))
		if s.replicas == 1 {
			fmt.Fprintf(&b, "- 1 replica (reported, no goal): %d of %d bursts of %d cost one provider call; %d of %d answers had the vector.\n",
				s.exactlyOne(), len(s.calls), flightBurst, s.vectors, s.answers)
			continue
		}
		pass := s.exactlyOne() == len(s.calls)
		goal := fmt.Sprintf("1 provider call per burst of %d over %d replicas", flightBurst, s.replicas)
		fmt.Fprintf(&b, "- %s: %d of %d bursts cost exactly one (at most %d); %d of %d answers had the vector, **%s**.\n",
			goal, s.exactlyOne(), len(s.calls), s.calls[len(s.calls)-1], s.vectors, s.answers, verdictOf(pass))
		if !pass {
			missed = append(missed, fmt.Sprintf("%s: %s: %d of %d bursts", flightName, goal, s.exactlyOne(), len(s.calls)))
		}
	}
	return sectionResult{text: b.String(), missed: missed}
}

// replicas is "1 replica" or "n replicas".
func replicas(n int) string {
	if n == 1 {
		return "1 replica"
	}
	return fmt.Sprintf("%d replicas", n)
}
