package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// The catalog measured by wrk, a load generator of its own process (C, epoll), the way
// a user would measure it: `wrk -t1 -c32 -d5s` against the service and against a bare
// net/http server writing the same bytes and headers, in interleaved rounds. Both
// servers run in this process, on the same cores; wrk's own CPU is outside it.
const (
	wrkName   = "GET /api/chat/tools with wrk"
	wrkRounds = 5
	wrkGoal   = 0.95
	wrkFloor  = 0.90
)

type wrkRound struct{ subject, baseline float64 }

func runWrk(ctx context.Context, env sectionEnv) (sectionResult, error) {
	if _, err := exec.LookPath("wrk"); err != nil {
		return sectionResult{}, errors.New("wrk is not installed (make bench installs it: apt-get install wrk)")
	}
	cat := env.svc.svc.HTTP.Registry().Catalog()
	bare, bareAddr, err := serve(bareCatalog(cat), "")
	if err != nil {
		return sectionResult{}, err
	}
	defer shutdown(bare)
	var rounds []wrkRound
	// One unmeasured round per side warms both up.
	for i := 0; i <= wrkRounds; i++ {
		s, err := wrk(ctx, env.svc.addr)
		if err != nil {
			return sectionResult{}, fmt.Errorf("sitetools: %w", err)
		}
		b, err := wrk(ctx, bareAddr)
		if err != nil {
			return sectionResult{}, fmt.Errorf("net/http: %w", err)
		}
		fmt.Fprintf(env.stderr, "%s: round %d/%d sitetools %.0f rps, net/http %.0f rps\n", wrkName, i, wrkRounds, s, b)
		if i > 0 {
			rounds = append(rounds, wrkRound{s, b})
		}
	}
	return wrkText(rounds, len(cat.JSON)), nil
}

var wrkRPS = regexp.MustCompile(`(?m)^Requests/sec:\s+([0-9.]+)`)

// wrk runs one 5-second round against addr and returns its requests per second; a
// round with socket errors or non-2xx/3xx answers is an error.
func wrk(ctx context.Context, addr string) (float64, error) {
	out, err := exec.CommandContext(ctx, "wrk", "-t1", "-c32", "-d5s", "-H", "Accept: application/json", "http://"+addr+"/api/chat/tools").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("wrk: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "Socket errors") || strings.Contains(string(out), "Non-2xx or 3xx") {
		return 0, fmt.Errorf("wrk saw errors:\n%s", out)
	}
	m := wrkRPS.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no Requests/sec in wrk's output:\n%s", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

func wrkText(rounds []wrkRound, catalogBytes int) sectionResult {
	var subj, base, ratios []float64
	for _, r := range rounds {
		subj, base = append(subj, r.subject), append(base, r.baseline)
		ratios = append(ratios, r.subject/r.baseline)
	}
	ratio := median(subj) / median(base)
	verdict := "PASS"
	var missed []string
	switch {
	case ratio < wrkFloor:
		verdict = fmt.Sprintf("MISS (below the floor %.2f by %.2f)", wrkFloor, wrkFloor-ratio)
		missed = append(missed, fmt.Sprintf("%s: ratio %.2f is below the floor %.2f", wrkName, ratio, wrkFloor))
	case ratio < wrkGoal:
		verdict = fmt.Sprintf("MISS (goal %.2f, short by %.2f; above the floor %.2f)", wrkGoal, wrkGoal-ratio, wrkFloor)
		missed = append(missed, fmt.Sprintf("%s: ratio %.2f misses the goal %.2f", wrkName, ratio, wrkGoal))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n", wrkName)
	fmt.Fprintf(&b, "`wrk -t1 -c32 -d5s` (wrk is a process of its own) against the in-process service and against a bare `net/http` "+
		"server writing the same %d bytes and headers, %d rounds per side interleaved after one unmeasured round each. "+
		"The ratio is the median of the service's rounds ÷ the median of the bare server's. Goal ≥ %.2f (floor %.2f).\n\n",
		catalogBytes, len(rounds), wrkGoal, wrkFloor)
	table(&b, [][]string{
		{"sitetools rps (median)", "net/http rps (median)", "ratio", "goal", "result"},
		{fmt.Sprintf("%.0f", median(subj)), fmt.Sprintf("%.0f", median(base)), fmt.Sprintf("%.2f", ratio), fmt.Sprintf("≥ %.2f", wrkGoal), verdict},
	})
	fmt.Fprintf(&b, "\n- rps per round: sitetools %s; net/http %s; ratio per pair of rounds %s\n",
		join(subj, "%.0f"), join(base, "%.0f"), join(ratios, "%.2f"))
	if ratio < wrkGoal {
		b.WriteString("- why short of the goal: every request still passes the middleware the README promises, a few " +
			"microseconds each: the request log line (formatted directly, as slog's JSON handler would), two Prometheus " +
			"observations, echo's routing and context, the CORS handler (nothing to do for a same-origin request) and the " +
			"recovery; at this rate, with wrk, the service and the bare server sharing two cores, that is the difference. " +
			"Runs differ by several hundredths (`BenchmarkCatalogHandler` in server/ measures the middleware alone)\n")
	}
	return sectionResult{text: b.String(), missed: missed}
}
