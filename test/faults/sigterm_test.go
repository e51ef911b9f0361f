package faults_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
	"github.com/sitetools/sitetools/internal/testkit"
)

// TestSIGTERMUnderLoad sends SIGTERM to `sitetools serve` while it has requests in
// flight on both listeners: chat turns streaming slowly from the model, searches
// waiting for a slow embedding provider, get_free_slots and an idempotent
// POST /admin/bookings waiting for a lock the test holds on the bookings table, and a
// stream of quick requests. Every request accepted before the signal completes with a
// full response; both listeners refuse new connections while those requests drain;
// the process exits 0 within SHUTDOWN_TIMEOUT. Nothing is half-written: every booking
// sent around the signal is stored whole or not at all, and a retry with its
// Idempotency-Key against a restarted process replays it (200) or stores it once (201).
func TestSIGTERMUnderLoad(t *testing.T) {
	const (
		shutdownTimeout = 15 * time.Second // SHUTDOWN_TIMEOUT
		searchDelay     = 2 * time.Second  // the embedding provider's, per request
		chunkDelay      = 100 * time.Millisecond
	)
	embed := llmtest.NewServer(t, 64)
	chatModel := llmtest.NewChatServer(t)
	// About 3s of streaming: still running when the signal comes.
	answer := strings.TrimSpace(strings.Repeat("Our accessibility audits test against WCAG 2.2 AA. ", 4))
	slowAnswer := llmtest.Say(answer)
	slowAnswer.ChunkDelay = chunkDelay
	chatModel.SetFallback(func(int, llmtest.ChatRequest) llmtest.ChatReply { return slowAnswer })

	dbURL := pgtest.NewURL(t)
	vars := serviceVars(t, dbURL, true, embeddingVars(embed), map[string]string{
		"EMBEDDINGS_TIMEOUT": "10s",
		"LLM_BASE_URL":       chatModel.BaseURL(),
		"LLM_MODEL":          "fake-model",
		"LLM_TIMEOUT":        "30s",
		"TOOL_TIMEOUT":       "20s",
		"SHUTDOWN_TIMEOUT":   shutdownTimeout.String(),
	})
	pub, adm := vars["LISTEN_ADDR"], vars["ADMIN_LISTEN_ADDR"]
	ingestDemo(t, vars)
	p := serveBinary(t, vars)
	r := newSigtermRun(t, dbURL, pub, adm)
	r.answer = answer

	r.startQuick(t)
	// The slow requests, each confirmed in flight before the signal. Their own
	// deadline is far past SHUTDOWN_TIMEOUT: only the server may end them.
	reqCtx, cancelRequests := context.WithTimeout(context.Background(), shutdownTimeout+30*time.Second)
	defer cancelRequests()
	r.reqCtx = reqCtx
	r.startChats(t)
	embed.SetDelay(searchDelay)
	r.startSearches(t, embed)
	tx := r.holdBookings(t)
	r.startBurst()

	r.signalled = time.Now()
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r.checkListenersClose(t, p)
	if err := tx.Commit(r.ctx); err != nil {
		t.Fatal(err)
	}
	r.checkDrained(t)
	select {
	case <-p.Done():
	case <-time.After(time.Until(r.signalled.Add(shutdownTimeout))):
		t.Fatalf("still running %v after SIGTERM (SHUTDOWN_TIMEOUT)", shutdownTimeout)
	}
	t.Logf("exited %v after SIGTERM: %v", time.Since(r.signalled).Round(time.Millisecond), p.Err())
	if p.Err() != nil {
		t.Errorf("exit: %v, want 0", p.Err())
	}
	if !refused(pub) || !refused(adm) {
		t.Error("a listener still accepts connections after the process exited")
	}
	r.checkQuick(t)
	r.checkStored(t)
	r.retryAll(t, vars, shutdownTimeout)
}

// burst is how many bookings are sent just as the signal is.
const burst = 4

// sigtermRun is one run of TestSIGTERMUnderLoad: the requests sent around the signal,
// and what they got.
type sigtermRun struct {
	ctx             context.Context
	reqCtx          context.Context // the slow requests': far past SHUTDOWN_TIMEOUT
	pub, adm        string
	base, adminBase string
	monitor         *pgx.Conn
	gate            *pgx.Conn
	slowClient      *http.Client
	answer          string
	signalled       time.Time
	chats           []chan chatResult
	searches, slots []chan reply
	inFlight        booking
	inFlightCh      chan reply
	burstKeys       []string
	burstBookings   []booking
	burstCh         []chan reply
	burstReplies    []reply
	late            booking
	quickMu         sync.Mutex
	quick           []quickRecord
	quickOK         atomic.Int64
	quickWG         sync.WaitGroup
	stopQuick       context.CancelFunc
}

type chatResult struct {
	events []sseEvent
	err    error
}

type quickRecord struct {
	what string
	r    reply
}

const (
	inFlightKey = "sigterm-in-flight"
	lateKey     = "sigterm-after-close"
)

func newSigtermRun(t *testing.T, dbURL, pub, adm string) *sigtermRun {
	t.Helper()
	ctx := context.Background()
	r := &sigtermRun{ctx: ctx, pub: pub, adm: adm, base: "http://" + pub, adminBase: "http://" + adm,
		slowClient: &http.Client{}, inFlight: newBooking(1), inFlightCh: make(chan reply, 1), late: newBooking(2)}
	t.Cleanup(r.slowClient.CloseIdleConnections)
	for _, c := range []**pgx.Conn{&r.gate, &r.monitor} {
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(ctx) })
		*c = conn
	}
	return r
}

// startQuick sends quick requests in a loop on kept-alive connections, until the
// service is gone, and waits until some succeeded.
func (r *sigtermRun) startQuick(t *testing.T) {
	loadCtx, stop := context.WithCancel(r.ctx)
	r.stopQuick = stop
	t.Cleanup(stop)
	client := &http.Client{}
	t.Cleanup(client.CloseIdleConnections)
	for w := range 3 {
		r.quickWG.Go(func() {
			for i := w; loadCtx.Err() == nil; i++ {
				what := []string{"/api/chat/tools", "/healthz"}[i%2]
				rctx, cancel := context.WithTimeout(loadCtx, 10*time.Second)
				res := do(rctx, client, http.MethodGet, r.base+what, nil, nil)
				cancel()
				if loadCtx.Err() != nil {
					return
				}
				r.quickMu.Lock()
				r.quick = append(r.quick, quickRecord{what, res})
				r.quickMu.Unlock()
				if res.err != nil {
					return // the service is going away
				}
				r.quickOK.Add(1)
			}
		})
	}
	if !testkit.Eventually(10*time.Second, func() bool { return r.quickOK.Load() >= 6 }) {
		t.Fatal("the quick requests do not succeed before the signal")
	}
}

// startChats opens two chat turns and waits for their first event.
func (r *sigtermRun) startChats(t *testing.T) {
	for range 2 {
		s, err := openChat(r.reqCtx, r.slowClient, r.base, "Tell me about your accessibility audits.")
		if err != nil {
			t.Fatal(err)
		}
		first, err := s.next()
		if err != nil {
			t.Fatalf("chat: no first event: %v", err)
		}
		ch := make(chan chatResult, 1)
		go func() {
			events, err := s.rest()
			ch <- chatResult{append([]sseEvent{first}, events...), err}
		}()
		r.chats = append(r.chats, ch)
	}
}

// startSearches sends two searches and waits until both reached the slow provider.
func (r *sigtermRun) startSearches(t *testing.T, embed *llmtest.Server) {
	calls := embed.Calls()
	for i := range 2 {
		ch := make(chan reply, 1)
		go func() {
			ch <- callTool(r.reqCtx, r.slowClient, r.base, "search_site", map[string]any{"query": fmt.Sprintf("privacy engineering for a shop, question %d", i)})
		}()
		r.searches = append(r.searches, ch)
	}
	if !testkit.Eventually(10*time.Second, func() bool { return embed.Calls() >= calls+2 }) {
		t.Fatalf("the searches never reached the embedding provider (%d calls)", embed.Calls()-calls)
	}
}

// holdBookings locks the bookings table, which get_free_slots reads and a booking
// writes, then sends two get_free_slots and one booking and waits until they wait for
// the lock. The caller commits the returned transaction to let them go.
func (r *sigtermRun) holdBookings(t *testing.T) pgx.Tx {
	tx, err := r.gate.Begin(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(r.ctx) })
	if _, err := tx.Exec(r.ctx, "LOCK TABLE bookings IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	tomorrow := time.Now().In(berlin).AddDate(0, 0, 1)
	for range 2 {
		ch := make(chan reply, 1)
		go func() {
			ch <- callTool(r.reqCtx, r.slowClient, r.base, "get_free_slots", map[string]any{
				"from": tomorrow.Format(time.DateOnly), "to": tomorrow.AddDate(0, 0, 6).Format(time.DateOnly)})
		}()
		r.slots = append(r.slots, ch)
	}
	go func() { r.inFlightCh <- postBooking(r.reqCtx, r.slowClient, r.adminBase, inFlightKey, r.inFlight) }()
	waiting := func() (inserts, selects int) {
		_ = r.monitor.QueryRow(r.ctx, `SELECT
			count(*) FILTER (WHERE query ILIKE 'INSERT INTO bookings%'),
			count(*) FILTER (WHERE query ILIKE '%FROM bookings%' AND query NOT ILIKE 'INSERT%')
			FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&inserts, &selects)
		return inserts, selects
	}
	if !testkit.Eventually(10*time.Second, func() bool { i, s := waiting(); return i >= 1 && s >= 2 }) {
		i, s := waiting()
		t.Fatalf("not in flight: %d bookings and %d slot queries wait for the lock, want 1 and 2", i, s)
	}
	return tx
}

// startBurst sends a burst of bookings, as the signal is: some may be accepted, some
// refused.
func (r *sigtermRun) startBurst() {
	r.burstKeys, r.burstBookings, r.burstCh = make([]string, burst), make([]booking, burst), make([]chan reply, burst)
	for i := range burst {
		r.burstKeys[i], r.burstBookings[i], r.burstCh[i] = fmt.Sprintf("sigterm-burst-%d", i), newBooking(10+i), make(chan reply, 1)
		go func() {
			c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			r.burstCh[i] <- postBooking(r.reqCtx, c, r.adminBase, r.burstKeys[i], r.burstBookings[i])
		}()
	}
}

// checkListenersClose: new connections are refused on both listeners while the gated
// requests hold the process open; a booking sent then is never answered.
func (r *sigtermRun) checkListenersClose(t *testing.T, p *testkit.Proc) {
	if !testkit.Eventually(5*time.Second, func() bool { return refused(r.pub) }) {
		t.Error("the public listener still accepts connections 5s after SIGTERM")
	}
	adminRefused := testkit.Eventually(3*time.Second, func() bool { return refused(r.adm) })
	if !adminRefused {
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		probe := do(r.reqCtx, c, http.MethodGet, r.adminBase+"/metrics", nil, map[string]string{"Authorization": "Bearer " + adminToken})
		t.Errorf("the admin listener still accepts new connections %v after SIGTERM, while public requests drain "+
			"(a new GET /metrics there: %d %v): App.Serve shuts its servers down one after the other, so the admin listener "+
			"stays open until the public one has drained, and then gets only what is left of SHUTDOWN_TIMEOUT",
			time.Since(r.signalled).Round(time.Millisecond), probe.status, probe.err)
	}
	if p.Alive() != nil {
		t.Fatalf("the process exited (%v) while requests it had accepted were still waiting", p.Err())
	}
	if adminRefused {
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		if res := postBooking(r.reqCtx, c, r.adminBase, lateKey, r.late); res.err == nil {
			t.Errorf("a booking sent after the admin listener closed was answered: %s", res)
		}
	}
}

// checkDrained: every request accepted before the signal completes with a full response.
func (r *sigtermRun) checkDrained(t *testing.T) {
	for i, ch := range r.chats {
		res := <-ch
		if res.err != nil {
			t.Errorf("chat %d: the stream broke: %v after %v", i, res.err, names(res.events))
			continue
		}
		var done struct{ Mode, Reason string }
		last := res.events[len(res.events)-1]
		if last.Name != "message.done" || json.Unmarshal(last.Data, &done) != nil || done.Mode != "llm" || done.Reason != "stop" {
			t.Errorf("chat %d: ends with %s %s, want message.done (llm, stop): %v", i, last.Name, last.Data, names(res.events))
		}
		if got := text(res.events); got != r.answer {
			t.Errorf("chat %d: answer %q, want the whole of %q", i, got, r.answer)
		}
	}
	for i, ch := range r.searches {
		res := <-ch
		out, err := res.tool()
		if res.err != nil || res.status != http.StatusOK || err != nil || out.IsError || len(out.StructuredContent.Results) == 0 || out.StructuredContent.Degraded != "" {
			t.Errorf("search %d: %s; want 200 with results from the full hybrid search", i, res)
		}
	}
	for i, ch := range r.slots {
		res := <-ch
		if out, err := res.tool(); res.err != nil || res.status != http.StatusOK || err != nil || out.IsError {
			t.Errorf("get_free_slots %d: %s", i, res)
		}
	}
	var stored created
	if res := <-r.inFlightCh; res.err != nil || res.status != http.StatusCreated || json.Unmarshal(res.body, &stored) != nil {
		t.Errorf("the booking in flight at the signal: %s; want 201", res)
	} else if err := sameBooking(stored, r.inFlight); err != nil || stored.Replayed {
		t.Errorf("the booking in flight at the signal came back altered (%v) or replayed: %s", err, res.body)
	}
	r.burstReplies = make([]reply, burst)
	for i := range burst {
		res := <-r.burstCh[i]
		r.burstReplies[i] = res
		switch {
		case res.err != nil && res.status == 0:
			// Refused, or reset before the server accepted it: never seen.
		case res.err == nil && res.status == http.StatusCreated:
		default:
			t.Errorf("burst booking %d: %s; want 201 or a refused connection", i, res)
		}
	}
}

// checkQuick: each quick request got 200 with its whole body, or a refused connection.
func (r *sigtermRun) checkQuick(t *testing.T) {
	r.stopQuick()
	r.quickWG.Wait()
	before, failed := 0, 0
	for _, f := range r.quick {
		switch {
		case f.r.err == nil && f.r.status == http.StatusOK:
			if f.r.start.Before(r.signalled) {
				before++
			}
		case f.r.err != nil && f.r.status == 0:
			// A new connection after the listener closed, or a kept-alive one the
			// server closed while idle: refused before any of it was read.
			failed++
		default:
			t.Errorf("quick request %s: %s; want 200 with its whole body, or a refused connection", f.what, f.r)
		}
	}
	t.Logf("quick requests: %d answered before the signal, %d in all, %d refused", before, len(r.quick)-failed, failed)
}

// rows are the active bookings stored with an idempotency key.
func (r *sigtermRun) rows(t *testing.T, key string) []created {
	t.Helper()
	rs, err := r.monitor.Query(r.ctx, `SELECT id::text, start_at, end_at, title, attendee, notes FROM bookings WHERE idempotency_key = $1 AND cancelled_at IS NULL`, key)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rs, func(row pgx.CollectableRow) (created, error) {
		var c created
		err := row.Scan(&c.Booking.ID, &c.Booking.Start, &c.Booking.End, &c.Booking.Title, &c.Booking.Attendee, &c.Booking.Notes)
		return c, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkStored: nothing half-written; each booking is stored whole, or not at all.
func (r *sigtermRun) checkStored(t *testing.T) {
	check := func(what, key string, b booking, mustExist bool) {
		t.Helper()
		got := r.rows(t, key)
		switch {
		case len(got) > 1:
			t.Errorf("%s: %d bookings with key %q", what, len(got), key)
		case len(got) == 0 && mustExist:
			t.Errorf("%s: answered 201 but not stored", what)
		case len(got) == 1:
			if err := sameBooking(got[0], b); err != nil {
				t.Errorf("%s: stored altered: %v", what, err)
			}
		}
	}
	check("the booking in flight at the signal", inFlightKey, r.inFlight, true)
	if got := r.rows(t, lateKey); len(got) != 0 {
		t.Errorf("the booking sent after the listener closed was stored: %+v", got)
	}
	for i := range burst {
		check(fmt.Sprintf("burst booking %d", i), r.burstKeys[i], r.burstBookings[i], r.burstReplies[i].err == nil)
	}
}

// retryAll retries every booking with its key against a restarted process: the stored
// booking (200, replayed), or the booking stored now, once (201).
func (r *sigtermRun) retryAll(t *testing.T, vars map[string]string, shutdownTimeout time.Duration) {
	p2 := serveBinary(t, vars)
	client := &http.Client{}
	defer client.CloseIdleConnections()
	retry := func(what, key string, b booking) {
		t.Helper()
		before := r.rows(t, key)
		rctx, cancel := context.WithTimeout(r.ctx, 10*time.Second)
		defer cancel()
		res := postBooking(rctx, client, r.adminBase, key, b)
		var c created
		if res.err != nil || json.Unmarshal(res.body, &c) != nil {
			t.Errorf("%s, retried: %s", what, res)
			return
		}
		switch {
		case len(before) == 1 && (res.status != http.StatusOK || !c.Replayed || c.Booking.ID != before[0].Booking.ID):
			t.Errorf("%s, retried: %s; want 200, replayed, id %s", what, res, before[0].Booking.ID)
		case len(before) == 0 && (res.status != http.StatusCreated || c.Replayed):
			t.Errorf("%s, retried: %s; want 201, not replayed", what, res)
		}
		if err := sameBooking(c, b); err != nil {
			t.Errorf("%s, retried: %v", what, err)
		}
		if got := r.rows(t, key); len(got) != 1 {
			t.Errorf("%s: %d bookings with its key after the retry, want 1", what, len(got))
		}
	}
	retry("the booking in flight at the signal", inFlightKey, r.inFlight)
	retry("the booking sent after the listener closed", lateKey, r.late)
	retry("the booking sent after the listener closed, again", lateKey, r.late)
	for i := range burst {
		retry(fmt.Sprintf("burst booking %d", i), r.burstKeys[i], r.burstBookings[i])
	}
	client.CloseIdleConnections()
	if err := p2.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p2.Done():
		if p2.Err() != nil {
			t.Errorf("restarted process: exit %v, want 0", p2.Err())
		}
	case <-time.After(shutdownTimeout):
		t.Errorf("the restarted process still runs %v after SIGTERM", shutdownTimeout)
	}
}

// sameBooking reports how c's booking differs from what was sent.
func sameBooking(c created, b booking) error {
	var diffs []string
	if !c.Booking.Start.Equal(b.Start) || !c.Booking.End.Equal(b.End) {
		diffs = append(diffs, fmt.Sprintf("time %v–%v, sent %v–%v", c.Booking.Start, c.Booking.End, b.Start, b.End))
	}
	if c.Booking.Title != b.Title || c.Booking.Attendee != b.Attendee || c.Booking.Notes != b.Notes {
		diffs = append(diffs, fmt.Sprintf("fields %q %q %q, sent %q %q %q", c.Booking.Title, c.Booking.Attendee, c.Booking.Notes, b.Title, b.Attendee, b.Notes))
	}
	if c.Booking.ID == "" {
		diffs = append(diffs, "no id")
	}
	if len(diffs) > 0 {
		return errors.New(strings.Join(diffs, "; "))
	}
	return nil
}
