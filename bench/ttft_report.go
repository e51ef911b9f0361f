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

// ttftStats is one kind at one concurrency: its samples' p50 and p99, and the time the
// service waited for a database connection, per sample.
type ttftStats struct {
	p50, p99 time.Duration
	n        int
	connWait time.Duration
}

func (c ttftCell) stats() ttftStats {
	s := sortedDurations(c.samples)
	st := ttftStats{p50: percentile(s, 50), p99: percentile(s, 99), n: len(s)}
	if len(s) > 0 {
		st.connWait = c.connWait / time.Duration(len(s))
	}
	return st
}

// ttftReport is the section: the method, the table, a tool turn's steps, and the goals
// judged at each concurrency up to ttftJudgedUpTo (reported without a goal above).
func ttftReport(cells *ttftCells, maxConns int32) sectionResult {
	var b strings.Builder
	ttftMethod(&b, maxConns)
	rows := [][]string{{"measured", "concurrent", "p50", "p99", "p50 per round", "samples", "DB connection wait per sample"}}
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
				strings.Join(rounds, " "), fmt.Sprint(st.n), duration(st.connWait)})
		}
	}
	table(&b, rows)
	b.WriteString("\n")
	ttftStepsTable(&b, cells, stats)
	var missed []string
	for ci, c := range ttftConcurrency {
		if c > ttftJudgedUpTo {
			ttftReported(&b, c, stats[ci])
			continue
		}
		missed = append(missed, ttftGoals(&b, c, stats[ci])...)
	}
	return sectionResult{text: b.String(), missed: missed}
}

// ttftMethod writes how the section measures.
func ttftMethod(b *strings.Builder, maxConns int32) {
	delay := duration(ttftDelay)
	conc := make([]string, len(ttftConcurrency))
	for i, c := range ttftConcurrency {
		conc[i] = fmt.Sprint(c)
	}
	fmt.Fprintf(b, "## %s\n\n", ttftName)
	fmt.Fprintf(b, "The service as `sitetools serve` builds it (app.Build from the bench's configuration, with "+
		"LLM_BASE_URL on a fake OpenAI-compatible model: llmtest.ChatServer, in this process, streaming the real wire "+
		"format, whose first chunk comes %s after each request), over real HTTP on loopback, %s and %s concurrent "+
		"turns in closed loops, the kinds' rounds interleaved; a round lasts -duration but takes at least %d and at "+
		"most %d samples. A turn's sample is the time from the client sending POST "+
		"/api/chat (consent true, one user message) to the client reading the data of the first `message.delta` event, "+
		"less %s for each model call: once for a turn the model answers at once, twice for a turn whose model first "+
		"calls search_site (on the demo index, its embedding cached) and then answers. What remains is what sitetools "+
		"adds, counting against it the fake model's own work and its timer's lateness; the fake model alone (the "+
		"request sitetools sent it for a turn without tools, posted directly; time to its first text, less %s) "+
		"shows that share. search_site alone is the same call through the registry on the chat channel "+
		"(interceptors, validation, the search), without HTTP, each worker pausing %s before each call as a tool "+
		"turn's two model calls do: what the tool round cannot avoid. Back to back, with nothing to wait for between "+
		"the calls, it is faster; that row is shown, not judged. The rate limit is off, CHAT_MAX_CONCURRENT is %d, "+
		"DATABASE_MAX_CONNS %d, and both daily budgets are on with a finite limit, as in production: "+
		"EMBEDDINGS_DAILY_TOKEN_BUDGET and LLM_DAILY_TOKEN_BUDGET are %s tokens, so every model call reserves its "+
		"tokens before it is sent (from the replica's lease on the day's budget, which grows and is renewed in "+
		"PostgreSQL) and settles them after, with a ledger row, and so would every uncached query embedding "+
		"(search_site's query is cached here). The DB connection wait is the time the service's pool waited for a "+
		"free connection (pgxpool's AcquireDuration) during the kind's rounds, per sample.\n\n",
		delay, strings.Join(conc[:len(conc)-1], ", "), conc[len(conc)-1], ttftMinSamples, ttftMaxSamples, delay, delay,
		duration(kindSearch.pause()), maxConcurrentChats, maxConns, thousands(ttftDailyBudget))
}

// ttftStepsTable writes where a tool turn's time goes, step by step, at each concurrency.
func ttftStepsTable(b *strings.Builder, cells *ttftCells, stats [][ttftKinds]ttftStats) {
	delay := duration(ttftDelay)
	rows := [][]string{{"concurrent", "to tool.call − " + delay, "tool.call → tool.result", "search_site alone",
		"tool.result → first text − " + delay, "turn without tools", "fake model alone"}}
	for ci, c := range ttftConcurrency {
		steps := cells[ci][kindTool].steps
		p50 := func(f func(toolSteps) time.Duration) string {
			return duration(percentile(sortedDurations(mapSlice(steps, f)), 50))
		}
		rows = append(rows, []string{fmt.Sprint(c),
			p50(func(s toolSteps) time.Duration { return s.first }),
			p50(func(s toolSteps) time.Duration { return s.tool }),
			duration(stats[ci][kindSearch].p50),
			p50(func(s toolSteps) time.Duration { return s.second }),
			duration(stats[ci][kindPlain].p50), duration(stats[ci][kindFake].p50)})
	}
	fmt.Fprintf(b, "A turn with one tool round, step by step as the client reads its events (p50 of each step over "+
		"the tool turns; the steps' p50s need not add up to the turn's): to tool.call, the first model call up to "+
		"its tool call, then settling its tokens and writing its ledger row before the tool starts; tool.call → "+
		"tool.result, search_site in the turn; tool.result → first text, the second request, with the tool's "+
		"result, reserved and sent, up to the model's first text. The model-call steps compare with a turn "+
		"without tools, one model call to its first text, and with the fake model's own share.\n\n")
	table(b, rows)
	b.WriteString("\n")
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

// ttftReported writes the figures the goals are on, at c concurrent turns, without
// judging them.
func ttftReported(b *strings.Builder, c int, st [ttftKinds]ttftStats) {
	plain := st[kindPlain].p50
	added := st[kindTool].p50 - plain
	fmt.Fprintf(b, "- %d concurrent (reported, no goal): a turn without tools adds %s at p50 (the fake model's own "+
		"share, measured alone: %s); the tool round adds %s, search_site alone takes %s, so %s beyond the search "+
		"itself; the service waited %s per tool turn for a database connection.\n", c, duration(plain),
		duration(st[kindFake].p50), signed(added), duration(st[kindSearch].p50), signed(added-st[kindSearch].p50),
		duration(st[kindTool].connWait))
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
		why = append(why, fmt.Sprintf("- why, at %d concurrent, without tools: a turn reserves its model call's tokens "+
			"in memory, from the replica's lease, and settles them and writes a ledger row after its first text; but "+
			"the two cores are shared by the service, PostgreSQL, the fake model and %d clients, so the turn's work "+
			"queues, and the rounds' p50s spread (see the table)\n", c, c))
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
		wait := ""
		if c > 1 {
			wait = fmt.Sprintf("; the two cores are shared by the service, PostgreSQL, the fake model and %d "+
				"clients, so these steps queue behind the searches' SQL (search_site back to back at this "+
				"concurrency takes %s at p50)", c, duration(st[kindSearchLoop].p50))
		}
		why = append(why, fmt.Sprintf("- why, at %d concurrent: besides the search, a tool round makes a second model "+
			"call, whose own overhead, as a turn without tools has it (the fake model's share included), all counts "+
			"beyond the search (tool.result → first text, above), and between the two calls it writes the first "+
			"call's ledger row (an INSERT, a round trip to PostgreSQL before the tool starts) and the tool's two "+
			"events%s; the steps above show which part of the turn holds the excess\n", c, wait))
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
