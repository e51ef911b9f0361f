package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// measure checks that both sides answer alike, warms both up, then runs the rounds
// interleaved (subject, baseline, subject, …) so that noise from the shared machine
// falls on both sides alike.
func measure(ctx context.Context, sc scenario, s settings, progress io.Writer) (result, error) {
	check := sc.check
	if check == nil {
		check = func() ([]string, error) { return checkParity(sc) }
	}
	notes, err := check()
	if err != nil {
		return result{}, err
	}
	res := result{sc: sc, notes: notes}
	conns := cmp.Or(sc.conns, s.conns)
	if warmup := max(s.warmup, sc.warmup); warmup > 0 {
		load(ctx, sc.subject, conns, warmup)
		load(ctx, sc.baseline, conns, warmup)
	}
	var subj, base []round
	for i := range s.rounds {
		for _, side := range []struct {
			t   target
			out *[]round
		}{{sc.subject, &subj}, {sc.baseline, &base}} {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			runtime.GC() // start each round from a collected heap, whichever side ran before
			r := load(ctx, side.t, conns, s.duration)
			*side.out = append(*side.out, r)
			fmt.Fprintf(progress, "%s: round %d/%d %-9s %8.0f rps, %d errors\n", sc.name, i+1, s.rounds, side.t.label, r.rps(), r.errors)
		}
	}
	res.subject, res.baseline = summarize(subj), summarize(base)
	if sc.peaks != nil {
		res.peaks = sc.peaks()
	}
	if sc.after != nil {
		res.notes = append(res.notes, sc.after()...)
	}
	return res, nil
}

// checkParity sends the scenario's request once to each side and fails unless the
// status, the body and the headers in sc.same are identical. Other header differences
// are returned as notes.
func checkParity(sc scenario) ([]string, error) {
	a, abody, err := probe(sc.subject)
	if err != nil {
		return nil, err
	}
	b, bbody, err := probe(sc.baseline)
	if err != nil {
		return nil, err
	}
	if a.StatusCode != sc.subject.want || b.StatusCode != sc.baseline.want || a.StatusCode != b.StatusCode {
		return nil, fmt.Errorf("parity: status %d (%s) vs %d (%s), want %d", a.StatusCode, sc.subject.label, b.StatusCode, sc.baseline.label, sc.subject.want)
	}
	if !bytes.Equal(abody, bbody) {
		return nil, fmt.Errorf("parity: bodies differ (%d vs %d bytes)", len(abody), len(bbody))
	}
	for _, h := range sc.same {
		if av, bv := a.Header.Values(h), b.Header.Values(h); !slices.Equal(av, bv) {
			return nil, fmt.Errorf("parity: %s is %q from %s, %q from %s", h, av, sc.subject.label, bv, sc.baseline.label)
		}
	}
	var notes []string
	for _, side := range []struct {
		label       string
		have, other http.Header
	}{{sc.subject.label, a.Header, b.Header}, {sc.baseline.label, b.Header, a.Header}} {
		var keys []string
		for k := range side.have {
			if k != "Date" && !slices.Equal(side.have[k], side.other[k]) {
				keys = append(keys, fmt.Sprintf("%s: %s", k, strings.Join(side.have[k], ", ")))
			}
		}
		slices.Sort(keys)
		if len(keys) > 0 {
			notes = append(notes, fmt.Sprintf("only %s sends %s", side.label, strings.Join(keys, "; ")))
		}
	}
	return notes, nil
}

func probe(t target) (*http.Response, []byte, error) {
	conn, err := net.DialTimeout("tcp", t.addr, 5*time.Second)
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write(t.req.raw(t.addr)); err != nil {
		return nil, nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", t.label, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// command is the command line that reproduces this run, with any password redacted.
func command(adminURL string, args []string) string {
	if u, err := urlRedacted(adminURL); err == nil {
		adminURL = u
	}
	cmd := "TEST_DATABASE_URL='" + adminURL + "' go run ./bench"
	for _, a := range args {
		cmd += " " + shellQuote(a)
	}
	return cmd
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// parseInts parses a comma-separated list of integers in [lo, hi].
func parseInts(list string, lo, hi int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < lo || n > hi {
			return nil, fmt.Errorf("%q is not an integer from %d to %d", f, lo, hi)
		}
		out = append(out, n)
	}
	return out, nil
}
