package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime/pprof"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// request is one HTTP/1.1 request, serialized once and replayed on every iteration so
// that the load generator spends as little CPU as possible: on a small machine it
// shares the cores with the server it measures.
type request struct {
	method string
	path   string
	header http.Header
	body   []byte
}

// raw is the request on the wire, for a server at addr.
func (r request) raw(addr string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: sitetools-bench\r\n", r.method, r.path, addr)
	h := r.header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if len(r.body) > 0 || r.method == http.MethodPost || r.method == http.MethodPut {
		h.Set("Content-Length", fmt.Sprint(len(r.body)))
	}
	_ = h.Write(&b)
	b.WriteString("\r\n")
	b.Write(r.body)
	return b.Bytes()
}

// target is one side of a scenario: a server and the request it is measured with, or,
// for a baseline that is not a server at all, a function doing the same work in-process.
type target struct {
	label string // shown in the table: "sitetools", "net/http", "pgx"
	addr  string // host:port of a loopback listener
	req   request
	want  int // the status every response must have
	// do, when set, replaces the HTTP request: each worker calls it in a closed loop,
	// and an error counts as one.
	do func(context.Context) error
	// cpu, when set, is the CPU time so far of the process serving addr, a subprocess:
	// its rounds count that process's CPU rather than this one's.
	cpu func() time.Duration
}

// cpuNow is the CPU time so far of whatever t's rounds are charged to.
func (t target) cpuNow() time.Duration {
	if t.cpu != nil {
		return t.cpu()
	}
	return processCPU()
}

// clientLabels mark the load generator in CPU profiles.
var clientLabels = pprof.WithLabels(context.Background(), pprof.Labels("side", "client"))

// round is the outcome of one closed-loop run against one target.
type round struct {
	requests int
	errors   int
	elapsed  time.Duration
	cpu      time.Duration   // CPU time of this whole process (server, client and runtime), or of the target's subprocess
	latency  []time.Duration // one per completed request, errors included
	firstErr error
}

func (r round) rps() float64 { return float64(r.requests) / r.elapsed.Seconds() }

// load runs a closed loop against t: c workers, each on its own keep-alive connection,
// send the next request as soon as the previous response is read in full, for d.
// A transport failure or a status other than t.want counts as an error (every
// non-2xx/3xx is one), and the worker reconnects.
func load(ctx context.Context, t target, c int, d time.Duration) round {
	var raw []byte
	if t.do == nil {
		raw = t.req.raw(t.addr)
	}
	var stop atomic.Bool
	timer := time.AfterFunc(d, func() { stop.Store(true) })
	defer timer.Stop()
	cancelStop := context.AfterFunc(ctx, func() { stop.Store(true) })
	defer cancelStop()

	results := make([]round, c)
	var wg sync.WaitGroup
	cpu0 := t.cpuNow()
	start := time.Now()
	for i := range c {
		wg.Go(func() {
			if t.do != nil {
				// The worker is the baseline itself: its CPU belongs to that side.
				pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("side", t.label)))
				results[i] = funcWorker(t, &stop, start.Add(d+10*time.Second))
				return
			}
			pprof.SetGoroutineLabels(clientLabels)
			results[i] = worker(raw, t, &stop, start.Add(d+10*time.Second))
		})
	}
	wg.Wait()
	total := round{elapsed: time.Since(start), cpu: t.cpuNow() - cpu0}
	for _, r := range results {
		total.requests += r.requests
		total.errors += r.errors
		total.latency = append(total.latency, r.latency...)
		if total.firstErr == nil {
			total.firstErr = r.firstErr
		}
	}
	return total
}

func worker(raw []byte, t target, stop *atomic.Bool, deadline time.Time) round {
	var (
		res  = round{latency: make([]time.Duration, 0, 1<<14)}
		conn net.Conn
		br   *bufio.Reader
	)
	fail := func(err error) {
		res.errors++
		if res.firstErr == nil {
			res.firstErr = err
		}
		if conn != nil {
			conn.Close()
			conn = nil
		}
	}
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for !stop.Load() {
		if conn == nil {
			c, err := net.DialTimeout("tcp", t.addr, 5*time.Second)
			if err != nil {
				fail(err)
				time.Sleep(10 * time.Millisecond)
				continue
			}
			_ = c.SetDeadline(deadline)
			conn, br = c, bufio.NewReaderSize(c, 32<<10)
		}
		begin := time.Now()
		if _, err := conn.Write(raw); err != nil {
			fail(err)
			continue
		}
		resp, err := http.ReadResponse(br, nil)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		res.latency = append(res.latency, time.Since(begin))
		res.requests++
		switch {
		case err != nil:
			fail(err)
		case resp.StatusCode != t.want:
			fail(fmt.Errorf("%s: status %d, want %d", t.label, resp.StatusCode, t.want))
		case resp.Close:
			conn.Close()
			conn = nil
		}
	}
	return res
}

// funcWorker calls t.do in a closed loop until stop, each call bounded by deadline.
func funcWorker(t target, stop *atomic.Bool, deadline time.Time) round {
	res := round{latency: make([]time.Duration, 0, 1<<12)}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	for !stop.Load() {
		begin := time.Now()
		err := t.do(ctx)
		res.latency = append(res.latency, time.Since(begin))
		res.requests++
		if err != nil {
			res.errors++
			if res.firstErr == nil {
				res.firstErr = fmt.Errorf("%s: %w", t.label, err)
			}
			if ctx.Err() != nil {
				break
			}
		}
	}
	return res
}

// processCPU is the user and system CPU time this process has used. Unlike throughput,
// CPU per request barely moves when other processes compete for the cores.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// percentile returns the p-th percentile (0 < p ≤ 100) of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p/100+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}
