package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// The catalog measured by wrk, a load generator of its own process (C, epoll), the way
// a user would measure it: `wrk -t1 -c32 -d5s` against the service and against a bare
// net/http server writing the same bytes and headers, in interleaved rounds, twice:
// in-process (both servers in this process, the request log formatted into a discarded
// writer) and out of process, as an operator runs it (`sitetools serve` with its
// request log written to a file, against a bare server of its own process). wrk's own
// CPU is outside every server's process.
const (
	wrkName   = "GET /api/chat/tools with wrk"
	wrkRounds = 5
	wrkGoal   = 0.95
	wrkFloor  = 0.90
)

// wrkSide is one server wrk loads; cpu is the CPU time so far of its process, and proc
// that process when it is a subprocess.
type wrkSide struct {
	label string
	addr  string
	cpu   func() time.Duration
	proc  *proc
}

// wrkRun is one round of wrk against one side.
type wrkRun struct {
	rps      float64
	requests int
	cpu      time.Duration // the side's process, during the round
}

type wrkRound struct{ subject, baseline wrkRun }

// wrkPair is one comparison: the service and a bare server with the same answer.
type wrkPair struct {
	name              string // "in-process", "out of process"
	about             string
	bodyBytes         int
	subject, baseline wrkSide
	// shared: both sides run in one process, whose CPU time counts every server in it.
	shared bool
	rounds []wrkRound
	// requests is every request wrk completed against the subject, warm-up included.
	requests int
	// finish, when set, runs once the rounds are over and returns notes.
	finish func() ([]string, error)
	notes  []string
}

func runWrk(ctx context.Context, env sectionEnv) (sectionResult, error) {
	if _, err := exec.LookPath("wrk"); err != nil {
		return sectionResult{}, errors.New("wrk is not installed (make bench installs it: apt-get install wrk)")
	}
	in, stopIn, err := inProcessPair(env)
	if err != nil {
		return sectionResult{}, err
	}
	defer stopIn()
	out, stopOut, err := outOfProcessPair(ctx, env)
	if err != nil {
		return sectionResult{}, fmt.Errorf("out of process: %w", err)
	}
	defer stopOut()
	pairs := []*wrkPair{in, out}
	// One unmeasured round per side warms each up; then the pairs take turns, each pair
	// a round of the service and one of its bare server.
	for i := 0; i <= wrkRounds; i++ {
		for _, p := range pairs {
			r, err := p.round(ctx)
			if err != nil {
				return sectionResult{}, fmt.Errorf("%s: %w", p.name, err)
			}
			fmt.Fprintf(env.stderr, "%s: %s round %d/%d sitetools %.0f rps, net/http %.0f rps\n",
				wrkName, p.name, i, wrkRounds, r.subject.rps, r.baseline.rps)
			if i > 0 {
				p.rounds = append(p.rounds, r)
			}
		}
	}
	for _, p := range pairs {
		if p.finish == nil {
			continue
		}
		if p.notes, err = p.finish(); err != nil {
			return sectionResult{}, fmt.Errorf("%s: %w", p.name, err)
		}
	}
	return wrkText(pairs), nil
}

// inProcessPair is the service this process serves and a bare net/http handler served
// beside it with the same http.Server settings.
func inProcessPair(env sectionEnv) (*wrkPair, func(), error) {
	cat := env.svc.svc.HTTP.Registry().Catalog()
	bare, bareAddr, err := serve(bareCatalog(cat), "")
	if err != nil {
		return nil, nil, err
	}
	return &wrkPair{
		name: "in-process",
		about: "the service as app.Build builds it (the seven tools), its request log formatted at info into a discarded " +
			"writer, and a bare `net/http` handler, both served by this process",
		bodyBytes: len(cat.JSON),
		subject:   wrkSide{label: "sitetools", addr: env.svc.addr, cpu: processCPU},
		baseline:  wrkSide{label: "net/http", addr: bareAddr, cpu: processCPU},
		shared:    true,
	}, func() { shutdown(bare) }, nil
}

// round runs wrk against the subject, then the baseline.
func (p *wrkPair) round(ctx context.Context) (wrkRound, error) {
	var r wrkRound
	for _, s := range []struct {
		side wrkSide
		out  *wrkRun
	}{{p.subject, &r.subject}, {p.baseline, &r.baseline}} {
		// Each round starts from a collected heap here, whichever side ran before.
		runtime.GC()
		before := s.side.cpu()
		run, err := wrk(ctx, s.side.addr)
		if err != nil {
			return r, fmt.Errorf("%s: %w%s", s.side.label, err, exited(s.side.proc))
		}
		run.cpu = s.side.cpu() - before
		*s.out = run
	}
	p.requests += r.subject.requests
	return r, nil
}

var (
	wrkRPS      = regexp.MustCompile(`(?m)^Requests/sec:\s+([0-9.]+)`)
	wrkRequests = regexp.MustCompile(`(?m)^\s*([0-9]+) requests in `)
)

// wrk runs one 5-second round against addr and returns its requests per second and
// count; a round with socket errors or non-2xx/3xx answers is an error.
func wrk(ctx context.Context, addr string) (wrkRun, error) {
	out, err := exec.CommandContext(ctx, "wrk", "-t1", "-c32", "-d5s", "-H", "Accept: application/json", "http://"+addr+"/api/chat/tools").CombinedOutput()
	if err != nil {
		return wrkRun{}, fmt.Errorf("wrk: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "Socket errors") || strings.Contains(string(out), "Non-2xx or 3xx") {
		return wrkRun{}, fmt.Errorf("wrk saw errors:\n%s", out)
	}
	m, n := wrkRPS.FindSubmatch(out), wrkRequests.FindSubmatch(out)
	if m == nil || n == nil {
		return wrkRun{}, fmt.Errorf("no Requests/sec or request count in wrk's output:\n%s", out)
	}
	rps, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		return wrkRun{}, err
	}
	requests, err := strconv.Atoi(string(n[1]))
	return wrkRun{rps: rps, requests: requests}, err
}
