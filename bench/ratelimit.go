package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The rate-limit scenario: on a `sitetools serve` with RATE_LIMIT_PER_MINUTE, a polite
// client calls search_site well under the limit, alone and then beside an abusive client
// sending 20× the limit. Both connect over loopback; TRUSTED_PROXIES=127.0.0.1 makes the
// service take each one's address from X-Forwarded-For, so that they are two clients.
const (
	rateName       = "rate limit: a polite client beside an abusive one at 20× the limit"
	ratePerMinute  = 720             // the service's limit: 12 calls a second per client, bursts of 720
	politeRate     = 10.0            // per second: 83% of the limit
	abuseFactor    = 20              // the abusive client sends this many times the limit
	abusiveConns   = 8               // its keep-alive connections
	rateWindow     = 7 * time.Second // each measured window; -rounds of each phase
	rateSettle     = time.Second     // after the abusive client's first 429, before the window
	politeAddress  = "192.0.2.10"    // TEST-NET-1
	abusiveAddress = "198.51.100.20" // TEST-NET-2
	politeP99Goal  = 2.0             // loaded p99 < this × unloaded p99
)

// paceStats counts the answers of a paced client.
type paceStats struct {
	sent, ok, limited, other int
	latency                  []time.Duration // sorted once merged
	elapsed                  time.Duration
	firstErr                 error
}

// merge adds the counts and latencies of one window of length d.
func (p *paceStats) merge(o paceStats, d time.Duration) {
	p.sent += o.sent
	p.ok += o.ok
	p.limited += o.limited
	p.other += o.other
	p.latency = append(p.latency, o.latency...)
	p.elapsed += d
	p.firstErr = cmpErr(p.firstErr, o.firstErr)
}

func (p paceStats) rate() float64 {
	if p.elapsed <= 0 {
		return 0
	}
	return float64(p.sent) / p.elapsed.Seconds()
}

// paced sends t's request at rate per second over conns keep-alive connections until
// stop: request k is due at start + k/rate, whatever became of the ones before (open
// loop), and its latency counts from when it was due, so that a slow answer delaying the
// next request is not hidden. Answers count only while counting says so; limited counts
// every 429 regardless.
func paced(t target, rate float64, conns int, stop *atomic.Bool, counting func() bool, limited *atomic.Int64) paceStats {
	raw := t.req.raw(t.addr)
	start := time.Now()
	interval := time.Duration(float64(time.Second) / rate)
	results := make([]paceStats, conns)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() {
			c := &pacedConn{t: t, raw: raw, res: &results[i]}
			defer c.close()
			for k := i; !stop.Load(); k += conns {
				due := start.Add(time.Duration(k) * interval)
				if d := time.Until(due); d > 0 {
					time.Sleep(d)
				}
				if stop.Load() {
					return
				}
				c.send(due, counting(), limited)
			}
		})
	}
	wg.Wait()
	var total paceStats
	for _, r := range results {
		total.sent += r.sent
		total.ok += r.ok
		total.limited += r.limited
		total.other += r.other
		total.latency = append(total.latency, r.latency...)
		total.firstErr = cmpErr(total.firstErr, r.firstErr)
	}
	slices.Sort(total.latency)
	return total
}

// pacedConn is one client connection of paced, redialled when the server closes it.
type pacedConn struct {
	t    target
	raw  []byte
	res  *paceStats
	conn net.Conn
	br   *bufio.Reader
}

func (c *pacedConn) close() {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

// send sends one request due at due and, when count, records its outcome and latency.
func (c *pacedConn) send(due time.Time, count bool, limited *atomic.Int64) {
	res := c.res
	if c.conn == nil {
		conn, err := net.DialTimeout("tcp", c.t.addr, 5*time.Second)
		if err != nil {
			if count {
				res.sent++
				res.other++
				res.firstErr = cmpErr(res.firstErr, err)
			}
			time.Sleep(10 * time.Millisecond)
			return
		}
		c.conn, c.br = conn, bufio.NewReaderSize(conn, 32<<10)
	}
	status, err := c.exchange()
	if status == http.StatusTooManyRequests {
		limited.Add(1)
	}
	if !count {
		return
	}
	res.sent++
	res.latency = append(res.latency, time.Since(due))
	switch {
	case err != nil:
		res.other++
		res.firstErr = cmpErr(res.firstErr, err)
	case status == http.StatusOK:
		res.ok++
	case status == http.StatusTooManyRequests:
		res.limited++
	default:
		res.other++
		res.firstErr = cmpErr(res.firstErr, fmt.Errorf("%s: status %d", c.t.label, status))
	}
}

// exchange writes the request and reads the response's status, closing the connection
// when either side ends it.
func (c *pacedConn) exchange() (int, error) {
	_ = c.conn.SetDeadline(time.Now().Add(30 * time.Second))
	status := 0
	_, err := c.conn.Write(c.raw)
	if err == nil {
		var resp *http.Response
		if resp, err = http.ReadResponse(c.br, nil); err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			status = resp.StatusCode
			if resp.Close {
				c.close()
			}
		}
	}
	if err != nil {
		c.close()
	}
	return status, err
}

// rateResult is the outcome of the rate-limit scenario.
type rateResult struct {
	alone, beside, abusive paceStats
	rounds                 int
	drain                  time.Duration // from the abusive client's first start to its first 429
	row                    deployedRow
}

func (r *rateResult) threshold() time.Duration {
	return time.Duration(politeP99Goal * float64(percentile(r.alone.latency, 99)))
}

func (r *rateResult) pass() bool {
	return r.beside.limited == 0 && r.beside.other == 0 && r.beside.sent > 0 && percentile(r.beside.latency, 99) < r.threshold()
}

func rateScenario(ctx context.Context, bin *serveBinary, rounds int, progress io.Writer) (*rateResult, error) {
	p, err := bin.start(ctx, map[string]string{
		"RATE_LIMIT_PER_MINUTE": fmt.Sprint(ratePerMinute),
		"TRUSTED_PROXIES":       "127.0.0.1",
	})
	if err != nil {
		return nil, err
	}
	defer p.stop()
	res := &rateResult{row: deployedRow{name: "search_site: polite + abusive client (RATE_LIMIT_PER_MINUTE=" + fmt.Sprint(ratePerMinute) + ")",
		process: "sitetools serve", conns: 1 + abusiveConns, rssReady: p.memory("VmRSS")}, rounds: rounds}
	args, err := json.Marshal(map[string]any{"name": "search_site", "arguments": map[string]any{"query": searchQuery, "limit": searchLimit}})
	if err != nil {
		return nil, err
	}
	client := func(label, addr string) target {
		return target{label: label, addr: p.addr, want: http.StatusOK, req: request{method: http.MethodPost, path: "/api/chat/tools", body: args,
			header: http.Header{"Accept": {"application/json"}, "Content-Type": {"application/json"}, "X-Forwarded-For": {addr}}}}
	}
	polite, abusive := client("polite", politeAddress), client("abusive", abusiveAddress)
	// One call each: the answer is a real search, and the query's vector gets cached.
	for _, t := range []target{polite, abusive} {
		if _, err := searchViaAPI(t); err != nil {
			return nil, fmt.Errorf("%s: %w", t.label, err)
		}
	}
	var limited atomic.Int64
	cpu0 := p.cpu()
	begin := time.Now()

	// Rounds alternate the polite client alone and beside the abusive client, so that
	// other work on the machine falls on both phases alike.
	for i := range rounds {
		if err := res.round(ctx, i, polite, abusive, &limited, progress); err != nil {
			return nil, err
		}
	}
	slices.Sort(res.alone.latency)
	slices.Sort(res.beside.latency)
	slices.Sort(res.abusive.latency)

	res.row.rssPeak = p.memory("VmHWM")
	res.row.requests = res.alone.sent + res.beside.sent + res.abusive.sent
	res.row.errors = res.beside.other + res.alone.other
	if n := res.row.requests; n > 0 {
		// CPU over the whole scenario, the burst and the unmeasured moments included.
		res.row.cpuPerReq = (p.cpu() - cpu0) / time.Duration(n)
	}
	all := slices.Concat(res.alone.latency, res.beside.latency)
	slices.Sort(all)
	res.row.p50, res.row.p99 = percentile(all, 50), percentile(all, 99)
	res.row.rps = float64(res.row.requests) / time.Since(begin).Seconds()
	return res, nil
}

// round measures the polite client alone, then beside the abusive client. The abusive
// client starts anew; the polite client's window begins once the abusive client's
// allowance is spent (its first 429 of the phase) and it has settled.
func (res *rateResult) round(ctx context.Context, i int, polite, abusive target, limited *atomic.Int64, progress io.Writer) error {
	always := func() bool { return true }
	var stop atomic.Bool
	timer := time.AfterFunc(rateWindow, func() { stop.Store(true) })
	alone := paced(polite, politeRate, 1, &stop, always, limited)
	timer.Stop()
	res.alone.merge(alone, rateWindow)

	var abuseStop, window atomic.Bool
	abuseDone := make(chan paceStats, 1)
	abuseStart, limited0 := time.Now(), limited.Load()
	go func() {
		abuseDone <- paced(abusive, abuseFactor*ratePerMinute/60.0, abusiveConns, &abuseStop, window.Load, limited)
	}()
	for limited.Load() == limited0 && time.Since(abuseStart) < time.Minute && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	drain := time.Since(abuseStart)
	if limited.Load() == limited0 {
		abuseStop.Store(true)
		<-abuseDone
		return fmt.Errorf("the abusive client got no 429 in %s: is RATE_LIMIT_PER_MINUTE applied?", drain.Round(time.Second))
	}
	if i == 0 {
		res.drain = drain
	}
	time.Sleep(rateSettle)
	window.Store(true)
	stop.Store(false)
	timer = time.AfterFunc(rateWindow, func() { stop.Store(true) })
	beside := paced(polite, politeRate, 1, &stop, always, limited)
	timer.Stop()
	window.Store(false)
	abuseStop.Store(true)
	res.beside.merge(beside, rateWindow)
	res.abusive.merge(<-abuseDone, rateWindow)
	fmt.Fprintf(progress, "%s: round %d/%d polite alone p99 %s, beside p99 %s (%d 429); abusive %d sent, %d 429\n", rateName, i+1, res.rounds,
		duration(percentile(alone.latency, 99)), duration(percentile(beside.latency, 99)), beside.limited, res.abusive.sent, res.abusive.limited)
	return nil
}

func (r *rateResult) text(b *strings.Builder) {
	fmt.Fprintf(b, "%s: search_site (cached embedding) on `sitetools serve` with RATE_LIMIT_PER_MINUTE=%d and TRUSTED_PROXIES=127.0.0.1\n\n",
		rateName, ratePerMinute)
	goal := fmt.Sprintf("no 429, p99 < %.0f× alone (%s)", politeP99Goal, duration(r.threshold()))
	rows := [][]string{
		{"client (X-Forwarded-For)", "phase", "sent / s", "requests", "200", "429", "other errors", "p50 / p99", "goal", "result"},
		{"polite (" + politeAddress + ")", "alone", fmt.Sprintf("%.1f", r.alone.rate()), fmt.Sprint(r.alone.sent), fmt.Sprint(r.alone.ok),
			fmt.Sprint(r.alone.limited), fmt.Sprint(r.alone.other), latencyOf(r.alone.latency), "–", "–"},
		{"polite (" + politeAddress + ")", "beside the abusive client", fmt.Sprintf("%.1f", r.beside.rate()), fmt.Sprint(r.beside.sent),
			fmt.Sprint(r.beside.ok), fmt.Sprint(r.beside.limited), fmt.Sprint(r.beside.other), latencyOf(r.beside.latency), goal, verdictOf(r.pass())},
		{"abusive (" + abusiveAddress + ")", "the same window", fmt.Sprintf("%.1f", r.abusive.rate()), fmt.Sprint(r.abusive.sent),
			fmt.Sprint(r.abusive.ok), fmt.Sprint(r.abusive.limited), fmt.Sprint(r.abusive.other), latencyOf(r.abusive.latency), "–", "–"},
	}
	table(b, rows)
	b.WriteString("\n")
	limitedShare := 0.0
	if r.abusive.sent > 0 {
		limitedShare = 100 * float64(r.abusive.limited) / float64(r.abusive.sent)
	}
	fmt.Fprintf(b, "- the polite client sends %.0f calls a second from one connection, %.0f%% of the limit (%d a minute per client, "+
		"bursts up to %[3]d); the abusive client sends %d× the limit, %.0f a second, over %d connections; both open loop: "+
		"each request is due at a fixed time and its latency counts from then\n",
		politeRate, 100*politeRate*60/ratePerMinute, ratePerMinute, abuseFactor, abuseFactor*ratePerMinute/60.0, abusiveConns)
	fmt.Fprintf(b, "- both connect from 127.0.0.1; with TRUSTED_PROXIES=127.0.0.1 the service takes the client address from "+
		"X-Forwarded-For (%s and %s), as behind a reverse proxy on the same host, so they are two clients of the limiter\n",
		politeAddress, abusiveAddress)
	fmt.Fprintf(b, "- %d rounds, each %s of the polite client alone, then %s beside the abusive client, which starts anew in each "+
		"round and is stopped after it; the polite client's window begins %s after the abusive client's first 429 of the round, "+
		"once its allowance is spent (in the first round its full burst of %d real searches took %s), so the window sees the "+
		"steady state: %d of the abusive client's %d requests in the windows (%.1f%%) got 429\n",
		r.rounds, rateWindow, rateWindow, rateSettle, ratePerMinute, r.drain.Round(100*time.Millisecond), r.abusive.limited, r.abusive.sent, limitedShare)
	if e := cmpErr(r.beside.firstErr, r.alone.firstErr); e != nil {
		fmt.Fprintf(b, "- polite client's first error: %v\n", e)
	}
	if r.abusive.firstErr != nil {
		fmt.Fprintf(b, "- abusive client's first error other than 429: %v\n", r.abusive.firstErr)
	}
}

func latencyOf(sorted []time.Duration) string {
	return duration(percentile(sorted, 50)) + " / " + duration(percentile(sorted, 99))
}
