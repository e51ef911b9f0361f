package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

func sortedDurations(xs []time.Duration) []time.Duration {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s
}

// ttftStats is one kind at one concurrency: its samples' p50 and p99.
type ttftStats struct {
	p50, p99 time.Duration
	n        int
}

func (c ttftCell) stats() ttftStats {
	s := sortedDurations(c.samples)
	return ttftStats{p50: percentile(s, 50), p99: percentile(s, 99), n: len(s)}
}

// ttftReport is the section: the method, the table, and the goals judged at each
// concurrency.
func ttftReport(cells *ttftCells) sectionResult {
	var b strings.Builder
	delay := duration(ttftDelay)
	fmt.Fprintf(&b, "## %s\n\n", ttftName)
	fmt.Fprintf(&b, "The service as `sitetools serve` builds it (app.Build from the bench's configuration, with "+
		"LLM_BASE_URL on a fake OpenAI-compatible model: llmtest.ChatServer, in this process, streaming the real wire "+
		"format, whose first chunk comes %s after each request), over real HTTP on loopback, %d and %d concurrent turns "+
		"in closed loops, the kinds' rounds interleaved. A turn's sample is the time from the client sending POST "+
		"/api/chat (consent true, one user message) to the client reading the data of the first `message.delta` event, "+
		"less %s for each model call: once for a turn the model answers at once, twice for a turn whose model first "+
		"calls search_site (on the demo index, its embedding cached) and then answers. What remains is what sitetools "+
		"adds, counting against it the fake model's own work and its timer's lateness; the fake model alone (the "+
		"request sitetools sent it for a turn without tools, posted directly; time to its first text, less %s) "+
		"shows that share. search_site alone is the same call through the registry on the chat channel "+
		"(interceptors, validation, the search), without HTTP, each worker pausing %s before each call as a tool "+
		"turn's two model calls do: what the tool round cannot avoid. Back to back, with nothing to wait for between "+
		"the calls, it is faster; that row is shown, not judged. The rate limit is off, CHAT_MAX_CONCURRENT is %d, "+
		"and the model's daily budget is unlimited but still reserved before and settled after each model call, "+
		"with a ledger row, as with a limit.\n\n",
		delay, ttftConcurrency[0], ttftConcurrency[len(ttftConcurrency)-1], delay, delay, duration(kindSearch.pause()),
		maxConcurrentChats)
	rows := [][]string{{"measured", "concurrent", "p50", "p99", "p50 per round", "samples"}}
	stats := make([][ttftKinds]ttftStats, len(ttftConcurrency))
	for ci, c := range ttftConcurrency {
		for k := range ttftKinds {
			cell := cells[ci][k]
			st := cell.stats()
			stats[ci][k] = st
			var rounds []string
			for _, p := range cell.roundP50s {
				rounds = append(rounds, duration(p))
			}
			rows = append(rows, []string{ttftRowName(k), fmt.Sprint(c), duration(st.p50), duration(st.p99),
				strings.Join(rounds, " "), fmt.Sprint(st.n)})
		}
	}
	table(&b, rows)
	b.WriteString("\n")
	var missed []string
	for ci, c := range ttftConcurrency {
		missed = append(missed, ttftGoals(&b, c, stats[ci])...)
	}
	return sectionResult{text: b.String(), missed: missed}
}

func ttftRowName(k ttftKind) string {
	switch k {
	case kindPlain:
		return fmt.Sprintf("turn, %s: TTFT − %s", k, duration(ttftDelay))
	case kindTool:
		return fmt.Sprintf("turn, %s: TTFT − 2 × %s", k, duration(ttftDelay))
	case kindFake:
		return fmt.Sprintf("%s: first text − %s", k, duration(ttftDelay))
	case kindSearch:
		return fmt.Sprintf("%s, each after a %s pause: latency", k, duration(kindSearch.pause()))
	}
	return k.String() + ": latency"
}

// ttftGoals writes the goals' verdicts at c concurrent turns and returns the missed ones.
func ttftGoals(b *strings.Builder, c int, st [ttftKinds]ttftStats) []string {
	var missed, why []string
	plain := st[kindPlain].p50
	goal := fmt.Sprintf("p50 overhead of a turn without tools ≤ %s", duration(ttftPlainGoal))
	verdict := verdictOf(plain <= ttftPlainGoal)
	if plain > ttftPlainGoal {
		verdict += " by " + duration(plain-ttftPlainGoal)
		missed = append(missed, fmt.Sprintf("%s, %d concurrent: %s: %s", ttftName, c, goal, duration(plain)))
		why = append(why, fmt.Sprintf("- why, at %d concurrent, without tools: before its model call a turn reserves its tokens "+
			"in the day's budget row (an UPDATE of one row, which the turns take in turn) and after it settles them and "+
			"writes a ledger row; the two cores are shared by the service, PostgreSQL, the fake model and %d clients, so "+
			"these steps queue, and the rounds' p50s spread (see the table)\n", c, c))
	}
	fmt.Fprintf(b, "- %d concurrent: %s: %s (the fake model's own share, measured alone: %s), **%s**.\n",
		c, goal, duration(plain), duration(st[kindFake].p50), verdict)
	added := st[kindTool].p50 - plain
	beyond := added - st[kindSearch].p50
	goal = fmt.Sprintf("the tool round adds ≤ search_site alone + %s", duration(ttftToolSlack))
	verdict = verdictOf(beyond <= ttftToolSlack)
	if beyond > ttftToolSlack {
		verdict += " by " + duration(beyond-ttftToolSlack)
		missed = append(missed, fmt.Sprintf("%s, %d concurrent: %s: %s beyond the search", ttftName, c, goal, signed(beyond)))
		wait := "each of them a round trip to PostgreSQL, one after another"
		if c > 1 {
			wait = fmt.Sprintf("the turns take the budget row in turn, and the two cores are shared by the service, "+
				"PostgreSQL, the fake model and %d clients, so these steps queue (search_site back to back at this "+
				"concurrency takes %s at p50)", c, duration(st[kindSearchLoop].p50))
		}
		why = append(why, fmt.Sprintf("- why, at %d concurrent: besides the search, a tool round makes a second model call, with "+
			"its tokens reserved in the day's budget row before and settled after (two UPDATEs of one row), a ledger "+
			"row for it and for the search, and the tool's events: %s\n", c, wait))
	}
	fmt.Fprintf(b, "- %d concurrent: %s: the tool round adds %s (p50 with it − p50 without), search_site alone "+
		"takes %s, so %s beyond the search itself (of which the second model call's fake model share, measured "+
		"alone: %s), **%s**.\n", c, goal, signed(added), duration(st[kindSearch].p50), signed(beyond),
		duration(st[kindFake].p50), verdict)
	for _, w := range why {
		b.WriteString(w)
	}
	return missed
}

// signed is duration with a minus sign for a negative d.
func signed(d time.Duration) string {
	if d < 0 {
		return "−" + duration(-d)
	}
	return duration(d)
}
