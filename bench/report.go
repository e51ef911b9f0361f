package main

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// side is one side of a scenario, summed over its measured rounds.
type side struct {
	rps      []float64 // per round, in order
	p50, p99 time.Duration
	requests int
	errors   int
	cpu      time.Duration
	firstErr error
}

// cpuPerRequest is the process's CPU time per request, load generator included.
func (s side) cpuPerRequest() time.Duration {
	if s.requests == 0 {
		return 0
	}
	return s.cpu / time.Duration(s.requests)
}

func summarize(rounds []round) side {
	var s side
	var lat []time.Duration
	for _, r := range rounds {
		s.rps = append(s.rps, r.rps())
		s.requests += r.requests
		s.errors += r.errors
		s.cpu += r.cpu
		lat = append(lat, r.latency...)
		if s.firstErr == nil {
			s.firstErr = r.firstErr
		}
	}
	slices.Sort(lat)
	s.p50, s.p99 = percentile(lat, 50), percentile(lat, 99)
	return s
}

type result struct {
	sc                scenario
	subject, baseline side
	notes             []string
	peaks             [2]int64 // peak RSS of subject and baseline, when they are subprocesses
}

// rpsRatio is subject ÷ baseline median throughput.
func (r result) rpsRatio() float64 {
	b := median(r.baseline.rps)
	if b == 0 {
		return 0
	}
	return median(r.subject.rps) / b
}

// p50Ratio is subject ÷ baseline median latency.
func (r result) p50Ratio() float64 {
	if r.baseline.p50 == 0 {
		return 0
	}
	return float64(r.subject.p50) / float64(r.baseline.p50)
}

// ratio is the one the goal is on.
func (r result) ratio() float64 {
	if r.sc.latency {
		return r.p50Ratio()
	}
	return r.rpsRatio()
}

// informational is a scenario without a goal: its ratio is printed, not judged.
func (r result) informational() bool { return r.sc.judge == nil && r.sc.goal == 0 }

func (r result) pass() bool {
	switch {
	case r.sc.judge != nil:
		return r.sc.judge(r)
	case r.informational():
		return true
	case r.sc.latency:
		return r.ratio() > 0 && r.ratio() <= r.sc.goal
	}
	return r.ratio() >= r.sc.goal
}

func (r result) goalText() string {
	switch {
	case r.sc.judge != nil:
		return r.sc.goalText
	case r.informational():
		return "–"
	case r.sc.latency:
		return fmt.Sprintf("p50 ≤ %.2f", r.sc.goal)
	}
	return fmt.Sprintf("rps ≥ %.2f", r.sc.goal)
}

// verdict is PASS, MISS or, without a goal, info.
func (r result) verdict() string {
	if r.informational() {
		return "info"
	}
	return verdictOf(r.pass())
}

// cpuRatio is baseline ÷ subject CPU time per request: the throughput ratio the two
// would have if both saturated the same cores. Time stolen by other processes lowers
// throughput but hardly CPU per request, so this estimate survives a busy machine.
func (r result) cpuRatio() float64 {
	s := r.subject.cpuPerRequest()
	if s == 0 {
		return 0
	}
	return float64(r.baseline.cpuPerRequest()) / float64(s)
}

// noisy reports whether the rounds of either side spread so far that the throughput
// ratio says more about the machine than about the code.
func (r result) noisy() bool {
	return spread(r.subject.rps) > noiseLimit || spread(r.baseline.rps) > noiseLimit
}

// report is what one run prints and writes to the docs.
type report struct {
	started time.Time
	command string
	s       settings
	catalog int // bytes of the catalog JSON
	results []result
	hnsw    []*hnswResult // none: not run
	tokens  []tokensRow   // none: not run
	// sections are the tables of the sections that ran (bench/sections.go).
	sections []sectionResult
	// deployed are the runs on subprocesses; rate the rate-limit scenario (nil: not run).
	deployed []deployedRow
	rate     *rateResult
	bin      *serveBinary // nil: not built
	took     time.Duration
}

func (rep report) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cores: %d (GOMAXPROCS %d), %s %s/%s, %s\n", runtime.NumCPU(), runtime.GOMAXPROCS(0),
		runtime.Version(), runtime.GOOS, runtime.GOARCH, rep.started.UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "load average at the end: %s\n", loadAverage())
	fmt.Fprintf(&b, "command: make bench  ≡  %s\n", rep.command)
	conns := fmt.Sprintf("%d keep-alive connections", rep.s.conns)
	if slices.ContainsFunc(rep.results, func(r result) bool { return r.sc.conns != 0 && r.sc.conns != rep.s.conns }) {
		conns += " (search_site: as many as its name says, on each side)"
	}
	fmt.Fprintf(&b, "load: closed loop, %s, %d × %s rounds per side interleaved, %s warm-up per side; catalog %d bytes\n",
		conns, rep.s.rounds, rep.s.duration, rep.s.warmup, rep.catalog)
	fmt.Fprintf(&b, "took: %s (setup, scenarios, deployed runs and HNSW recall; the go build of the bench itself not counted)\n", rep.took.Round(time.Second))
	fmt.Fprintf(&b, "this process's peak RSS: %s (the in-process services, baselines and load generator together; a service's own is in the as-deployed table)\n\n",
		megabytes(statusBytes("/proc/self/status", "VmHWM")))

	sections := 0
	next := func() {
		if sections > 0 {
			b.WriteString("\n")
		}
		sections++
	}
	if len(rep.results) > 0 {
		next()
		rep.scenarioText(&b)
	}
	if len(rep.deployed) > 0 && rep.bin != nil {
		next()
		deployedText(&b, rep.deployed, rep.s, rep.bin)
	}
	if rep.rate != nil {
		next()
		rep.rate.text(&b)
	}
	if len(rep.tokens) > 0 {
		next()
		tokensText(&b, rep.tokens)
	}
	sectionsText(&b, next, rep.sections)
	for _, h := range rep.hnsw {
		next()
		h.text(&b)
	}
	return b.String()
}

func (rep report) scenarioText(b *strings.Builder) {
	rows := [][]string{{"scenario", "subject rps", "baseline rps", "rps ratio", "CPU ratio", "p50 ratio", "goal", "result", "subject p50 / p99", "baseline p50 / p99", "errors"}}
	for _, r := range rep.results {
		verdict := r.verdict()
		if r.noisy() {
			verdict += " (noisy)"
		}
		// Against a baseline in this process whose work is mostly PostgreSQL's, this
		// process's CPU says nothing of the throughput the two would have.
		cpuRatio := "–"
		if r.sc.baseline.do == nil {
			cpuRatio = fmt.Sprintf("%.2f", r.cpuRatio())
		}
		rows = append(rows, []string{
			r.sc.name,
			fmt.Sprintf("%.0f", median(r.subject.rps)),
			fmt.Sprintf("%.0f", median(r.baseline.rps)),
			fmt.Sprintf("%.2f", r.rpsRatio()),
			cpuRatio,
			fmt.Sprintf("%.2f", r.p50Ratio()),
			r.goalText(),
			verdict,
			latencies(r.subject),
			latencies(r.baseline),
			fmt.Sprintf("%d / %d", r.subject.errors, r.baseline.errors),
		})
	}
	table(b, rows)

	b.WriteString("\n")
	for _, r := range rep.results {
		pairs := make([]float64, len(r.subject.rps))
		for i := range pairs {
			pairs[i] = r.subject.rps[i] / max(r.baseline.rps[i], 1)
		}
		fmt.Fprintf(b, "- %s\n", r.sc.name)
		goal := "no goal, informational"
		if !r.informational() {
			goal = "goal " + r.goalText() + ": " + verdictOf(r.pass())
		}
		switch {
		case r.sc.judge != nil || r.sc.latency:
			fmt.Fprintf(b, "  - p50 ratio %.2f = %s %s ÷ %s %s; p99 %s %s, %s %s (%s)\n", r.p50Ratio(), r.sc.subject.label, duration(r.subject.p50),
				r.sc.baseline.label, duration(r.baseline.p50), r.sc.subject.label, duration(r.subject.p99), r.sc.baseline.label, duration(r.baseline.p99), goal)
		default:
			fmt.Fprintf(b, "  - rps ratio %.2f = %s %.0f ÷ %s %.0f (%s)\n", r.rpsRatio(), r.sc.subject.label, median(r.subject.rps),
				r.sc.baseline.label, median(r.baseline.rps), goal)
		}
		fmt.Fprintf(b, "  - rps per round: %s %s, %s %s; ratio per pair of rounds: %s\n",
			r.sc.subject.label, join(r.subject.rps, "%.0f"), r.sc.baseline.label, join(r.baseline.rps, "%.0f"), join(pairs, "%.2f"))
		whose := "whole process, load generator included"
		if r.sc.subject.cpu != nil && r.sc.baseline.cpu != nil {
			whose = "each server's own process, load generator excluded"
		}
		fmt.Fprintf(b, "  - CPU per request (%s): %s %s, %s %s; %d + %d requests\n", whose,
			r.sc.subject.label, duration(r.subject.cpuPerRequest()), r.sc.baseline.label, duration(r.baseline.cpuPerRequest()),
			r.subject.requests, r.baseline.requests)
		for _, n := range r.notes {
			fmt.Fprintf(b, "  - %s\n", n)
		}
		if r.noisy() {
			advice := "trust the CPU ratio, or rerun on a quiet machine"
			if r.sc.latency {
				advice = "both sides suffered it in turn, but rerun on a quiet machine to be sure"
			}
			fmt.Fprintf(b, "  - noisy: rounds of one side differ by more than %.0f%% of their median (%s %.0f%%, %s %.0f%%): "+
				"other work competed for the cores; %s\n",
				100*noiseLimit, r.sc.subject.label, 100*spread(r.subject.rps), r.sc.baseline.label, 100*spread(r.baseline.rps), advice)
		}
	}
	abouts := map[string]bool{}
	for _, r := range rep.results {
		if !abouts[r.sc.about] {
			abouts[r.sc.about] = true
			fmt.Fprintf(b, "- subject vs baseline: %s\n", r.sc.about)
		}
	}
}

func verdictOf(pass bool) string {
	if pass {
		return "PASS"
	}
	return "MISS"
}

// noiseLimit is the spread of one side's rounds, relative to their median, above which the
// report warns that the machine was busy with something else.
const noiseLimit = 0.15

func spread(rps []float64) float64 {
	m := median(rps)
	if m == 0 {
		return 0
	}
	return (slices.Max(rps) - slices.Min(rps)) / m
}

// loadAverage is the 1-, 5- and 15-minute load averages, where the system reports them.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func latencies(s side) string {
	return duration(s.p50) + " / " + duration(s.p99)
}

func duration(d time.Duration) string {
	switch {
	case d < 10*time.Microsecond:
		return fmt.Sprintf("%.1fµs", float64(d)/float64(time.Microsecond))
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	}
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}

func join(xs []float64, format string) string {
	parts := make([]string, len(xs))
	for i, v := range xs {
		parts[i] = fmt.Sprintf(format, v)
	}
	return strings.Join(parts, " ")
}

// table writes rows as a Markdown table padded to line up in a terminal too.
func table(b *strings.Builder, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	line := func(row []string) {
		b.WriteString("|")
		for i, cell := range row {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell))
			if i == 0 {
				fmt.Fprintf(b, " %s%s |", cell, pad) // names left, numbers right
			} else {
				fmt.Fprintf(b, " %s%s |", pad, cell)
			}
		}
		b.WriteString("\n")
	}
	line(rows[0])
	b.WriteString("|")
	for i, w := range widths {
		if i == 0 {
			b.WriteString(" " + strings.Repeat("-", w) + " |")
		} else {
			b.WriteString(" " + strings.Repeat("-", w-1) + ": |")
		}
	}
	b.WriteString("\n")
	for _, row := range rows[1:] {
		line(row)
	}
}

const docHeader = `# Benchmarks

This file is rewritten by every ` + "`make bench`" + ` (bench/main.go); do not edit it by hand. The browser
benchmarks of the same run write [benchmarks-browser-search.md](benchmarks-browser-search.md)
(the site search, keystroke to results through ` + "`next start`" + `).

**Method.** Each scenario of the first table compares a *subject* with a *baseline* that gives the
same answer. Most subjects are the real service, built in-process as ` + "`sitetools serve`" + ` builds it,
search tools included, on a migrated PostgreSQL holding the demo site ingested as ` + "`make demo`" + `
ingests it, with request logging on at info into a discarded JSON handler. For the catalog scenarios
the baseline is a bare ` + "`net/http`" + ` handler, and both are served by an ` + "`http.Server`" + ` with the
same settings on a loopback TCP port. For ` + "`search_site`" + ` it is the tool's own SQL
(` + "`postgres.SearchSQL`" + `) with the same parameters and the same cached query vector, run
directly on a pgxpool opened as the service opens its own and planned as the service plans it
(` + "`postgres.SiteIndex.Search`" + `: a search without a language or a path prefix on the statement's
generic plan). Before any load the harness checks that
both sides answer alike: the same status, body and listed headers, or for ` + "`search_site`" + ` the
same pages in the same order with the same scores, for ` + "`tools/list`" + ` the same tool definitions.

- **/mcp vs the JSON endpoint** (goal for ` + "`tools/list`" + `: ≥ 0.8 of the JSON endpoint's throughput; no goal,
  the ratio printed, for ` + "`tools/call`" + `): the same in-process service
  answers a raw JSON-RPC POST to ` + "`/mcp`" + ` with the headers a remote MCP client sends
  (` + "`Content-Type: application/json`" + `, ` + "`Accept: application/json, text/event-stream`" + `,
  ` + "`Mcp-Protocol-Version: 2025-11-25`" + `; stateless, so no initialize first): ` + "`tools/list`" + ` against
  ` + "`GET /api/chat/tools`" + `, and a cached ` + "`search_site`" + ` ` + "`tools/call`" + ` against
  ` + "`POST /api/chat/tools`" + `. A plain ` + "`tools/list`" + ` is answered from the SDK's own answer, precomputed per
  protocol revision when the registry changes (server/mcplist.go; a test proves the bytes equal the SDK's for every
  revision); anything else goes through the SDK.
- **/mcp vs the TypeScript SDK** (goal: sitetools ≥ 3× the Node server's throughput): the real
  ` + "`sitetools serve`" + ` binary against ` + "`bench/node/server.mjs`" + `, a minimal stateless MCP server on the
  official ` + "`@modelcontextprotocol/sdk`" + ` (the SDK's stateless example with JSON responses), serving the
  tool definitions exported from serve's own ` + "`tools/list`" + `; both are processes of their own, loaded
  by the same generator in interleaved rounds, and each side's CPU is its own process's. ` + "`make bench`" + `
  installs the peer's packages (` + "`npm ci`" + ` in ` + "`bench/node`" + `) when they are missing; Node ≥ 20 is needed
  (` + "`NODE=/path/to/node`" + ` picks another one).
- **get_free_slots** (goal: FreeSlots p99 < 2 ms): 31 days over 10 000 bookings, all inside the range,
  in a database of their own (` + "`" + slotsDatabase + "`" + `); the service is built as serve builds it from
  ` + "`AVAILABILITY_CONFIG`" + ` (the example schedule, bookings as the busy source) but with a fixed clock,
  so that the range stays inside the horizon. The subject is the whole HTTP call; the baseline is
  ` + "`appointments.FreeSlots`" + ` alone on the busy intervals the same source returns, loaded once. The
  goal is on the baseline's wall-clock p99; its CPU time per call on its own thread is printed
  beside it, as the number that survives a busy machine.

A closed-loop load generator (C keep-alive connections, or C workers calling the baseline, each
sending its next request as soon as the previous answer is read) warms each side up, then runs
measured rounds alternating subject and baseline, so that other work on the machine falls on both
alike.

- **rps** is the median over rounds; **rps ratio** is subject ÷ baseline rps and **p50 ratio**
  subject ÷ baseline median latency. **goal** names the ratio judged (PASS/MISS; *info* where
  there is none): throughput for the catalog and the Node peer, latency for ` + "`search_site`" + `, where
  the question is how much the public API adds to a search, not how many searches the machine can
  run. ` + "`search_site`" + ` runs with one connection (the latency of a request alone) and with several
  (under load, where queueing in PostgreSQL, the same for both sides, dilutes the difference).
- **CPU ratio** is baseline ÷ subject CPU time per request of the whole process (load generator
  included), or, where both sides are processes of their own, of each server's process alone: the
  throughput ratio the two would have while saturating the same cores. Time stolen by other
  processes lowers throughput but hardly CPU per request, so when a row is marked *noisy* (rounds
  of one side spread by more than 15%), the CPU ratio is the number to trust. It is left out (–)
  where the baseline's work is mostly PostgreSQL's, which no process CPU time of this one includes.
- **p50 / p99** are over every request of every measured round; **errors** are transport failures
  and responses with a status other than the expected one.

The load generator shares the process and the cores with the in-process servers, so its own cost is
in both numbers: a ratio is the end-to-end view of a client on this machine, and understates how
much more CPU the subject's handler spends than the baseline's. Absolute numbers depend on the
machine and compare only within one run. To see where the time goes: ` + "`go run ./bench -cpuprofile cpu.out`" + `,
then ` + "`go tool pprof -tagfocus side=sitetools cpu.out`" + ` (sides are labelled ` + "`sitetools`" + `,
` + "`net/http`" + `, ` + "`pgx`" + ` and ` + "`client`" + `; ` + "`go tool pprof -tags`" + ` splits the CPU time between them).

**As deployed.** Peak RSS is the service's own only when the service is a process of its own: the
bench builds the ` + "`sitetools serve`" + ` binary (` + "`go build -ldflags '-s -w'`" + `) and, for each of the catalog,
` + "`search_site`" + ` and ` + "`/mcp`" + ` scenarios, starts it afresh on the bench database (the example schedule as
` + "`AVAILABILITY_CONFIG`" + `, logging at info into a file), waits for ` + "`/readyz`" + `, warms it up, runs one
round, and reads ` + "`VmHWM`" + ` (peak resident set) from ` + "`/proc/PID/status`" + ` and its CPU time from
` + "`/proc/PID/stat`" + `. The Node comparison and the rate-limit scenario run on such processes too and
add their rows. The in-process scenarios have no RSS of their own; the header gives this process's
peak, load generator included.

**Rate limit.** A ` + "`sitetools serve`" + ` with ` + "`RATE_LIMIT_PER_MINUTE`" + ` and ` + "`TRUSTED_PROXIES=127.0.0.1`" + `: both
clients connect over loopback and name their address in ` + "`X-Forwarded-For`" + `, as behind a reverse
proxy on the same host, so they are two clients of the limiter. A polite client calls the cached
` + "`search_site`" + ` under the limit, open loop at a fixed rate, alone and then beside an abusive client
sending 20× the limit, in alternating rounds; the polite client's window starts once the abusive
client's burst allowance is spent. Goal: the polite client sees no 429 and a p99 under 2× its p99
alone.

` + hnswMethod + `
## Latest run

`
