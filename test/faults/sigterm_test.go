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
		burst           = 4 // bookings sent just as the signal is
	)
	embed := llmtest.NewServer(t, 64)
	chatModel := llmtest.NewChatServer(t)
	// About 3s of streaming: still running when the signal comes.
	answer := strings.TrimSpace(strings.Repeat("Our accessibility audits test against WCAG 2.2 AA. ", 4))
	slowAnswer := llmtest.Say(answer)
	slowAnswer.ChunkDelay = chunkDelay
	chatModel.SetFallback(func(int, llmtest.ChatRequest) llmtest.ChatReply { return slowAnswer })

	dbURL := pgtest.NewURL(t)
	pub, adm := freeAddr(t), freeAddr(t)
	vars := map[string]string{
		"DATABASE_URL":          dbURL,
		"LISTEN_ADDR":           pub,
		"ADMIN_LISTEN_ADDR":     adm,
		"ADMIN_TOKEN":           adminToken,
		"RATE_LIMIT_PER_MINUTE": "0",
		"AVAILABILITY_CONFIG":   availabilityConfig(),
		"EMBEDDINGS_PROVIDER":   "openai",
		"EMBEDDINGS_BASE_URL":   embed.BaseURL(),
		"EMBEDDINGS_MODEL":      "fake-embedding",
		"EMBEDDINGS_DIMENSIONS": "64",
		"EMBEDDINGS_TIMEOUT":    "10s",
		"LLM_BASE_URL":          chatModel.BaseURL(),
		"LLM_MODEL":             "fake-model",
		"LLM_TIMEOUT":           "30s",
		"TOOL_TIMEOUT":          "20s",
		"SHUTDOWN_TIMEOUT":      shutdownTimeout.String(),
	}
	ingestDemo(t, vars)
	p := serveBinary(t, vars)
	base, adminBase := "http://"+pub, "http://"+adm

	ctx := context.Background()
	gate, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer gate.Close(ctx)
	monitor, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer monitor.Close(ctx)

	// Quick requests in a loop on kept-alive connections, until the service is gone.
	type fastRecord struct {
		what string
		r    reply
	}
	var (
		fastMu sync.Mutex
		fast   []fastRecord
		fastOK atomic.Int64
		fastWG sync.WaitGroup
	)
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	fastClient := &http.Client{}
	defer fastClient.CloseIdleConnections()
	for w := range 3 {
		fastWG.Add(1)
		go func() {
			defer fastWG.Done()
			for i := w; loadCtx.Err() == nil; i++ {
				what := []string{"/api/chat/tools", "/healthz"}[i%2]
				rctx, cancel := context.WithTimeout(loadCtx, 10*time.Second)
				r := do(rctx, fastClient, http.MethodGet, base+what, nil, nil)
				cancel()
				if loadCtx.Err() != nil {
					return
				}
				fastMu.Lock()
				fast = append(fast, fastRecord{what, r})
				fastMu.Unlock()
				if r.err != nil {
					return // the service is going away
				}
				fastOK.Add(1)
			}
		}()
	}
	if !eventually(10*time.Second, func() bool { return fastOK.Load() >= 6 }) {
		t.Fatal("the quick requests do not succeed before the signal")
	}

	// The slow requests, each confirmed in flight before the signal. Their own
	// deadline is far past SHUTDOWN_TIMEOUT: only the server may end them.
	reqCtx, cancelRequests := context.WithTimeout(ctx, shutdownTimeout+30*time.Second)
	defer cancelRequests()
	slowClient := &http.Client{}
	defer slowClient.CloseIdleConnections()

	type chatResult struct {
		events []sseEvent
		err    error
	}
	var chats []chan chatResult
	for range 2 {
		s, err := openChat(reqCtx, slowClient, base, "Tell me about your accessibility audits.")
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
		chats = append(chats, ch)
	}

	embed.SetDelay(searchDelay)
	calls := embed.Calls()
	var searches []chan reply
	for i := range 2 {
		ch := make(chan reply, 1)
		go func() {
			ch <- callTool(reqCtx, slowClient, base, "search_site", map[string]any{"query": fmt.Sprintf("privacy engineering for a shop, question %d", i)})
		}()
		searches = append(searches, ch)
	}
	if !eventually(10*time.Second, func() bool { return embed.Calls() >= calls+2 }) {
		t.Fatalf("the searches never reached the embedding provider (%d calls)", embed.Calls()-calls)
	}

	// Hold the bookings table: get_free_slots reads it, a booking writes it.
	tx, err := gate.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "LOCK TABLE bookings IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	tomorrow := time.Now().In(berlin).AddDate(0, 0, 1)
	var slots []chan reply
	for range 2 {
		ch := make(chan reply, 1)
		go func() {
			ch <- callTool(reqCtx, slowClient, base, "get_free_slots", map[string]any{
				"from": tomorrow.Format(time.DateOnly), "to": tomorrow.AddDate(0, 0, 6).Format(time.DateOnly)})
		}()
		slots = append(slots, ch)
	}
	const inFlightKey = "sigterm-in-flight"
	inFlight := newBooking(1)
	inFlightCh := make(chan reply, 1)
	go func() { inFlightCh <- postBooking(reqCtx, slowClient, adminBase, inFlightKey, inFlight) }()
	waiting := func() (inserts, selects int) {
		_ = monitor.QueryRow(ctx, `SELECT
			count(*) FILTER (WHERE query ILIKE 'INSERT INTO bookings%'),
			count(*) FILTER (WHERE query ILIKE '%FROM bookings%' AND query NOT ILIKE 'INSERT%')
			FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&inserts, &selects)
		return inserts, selects
	}
	if !eventually(10*time.Second, func() bool { i, s := waiting(); return i >= 1 && s >= 2 }) {
		i, s := waiting()
		t.Fatalf("not in flight: %d bookings and %d slot queries wait for the lock, want 1 and 2", i, s)
	}

	// A burst of bookings, sent as the signal is: some may be accepted, some refused.
	burstKeys := make([]string, burst)
	burstBookings := make([]booking, burst)
	burstCh := make([]chan reply, burst)
	for i := range burst {
		burstKeys[i], burstBookings[i], burstCh[i] = fmt.Sprintf("sigterm-burst-%d", i), newBooking(10+i), make(chan reply, 1)
		go func() {
			c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			burstCh[i] <- postBooking(reqCtx, c, adminBase, burstKeys[i], burstBookings[i])
		}()
	}

	signalled := time.Now()
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}

	// New connections are refused on both listeners while the gated requests hold the
	// process open.
	if !eventually(5*time.Second, func() bool { return refused(pub) }) {
		t.Error("the public listener still accepts connections 5s after SIGTERM")
	}
	adminRefused := eventually(3*time.Second, func() bool { return refused(adm) })
	if !adminRefused {
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		probe := do(reqCtx, c, http.MethodGet, adminBase+"/metrics", nil, map[string]string{"Authorization": "Bearer " + adminToken})
		t.Errorf("the admin listener still accepts new connections %v after SIGTERM, while public requests drain "+
			"(a new GET /metrics there: %d %v): App.Serve shuts its servers down one after the other, so the admin listener "+
			"stays open until the public one has drained, and then gets only what is left of SHUTDOWN_TIMEOUT",
			time.Since(signalled).Round(time.Millisecond), probe.status, probe.err)
	}
	if p.Alive() != nil {
		t.Fatalf("the process exited (%v) while requests it had accepted were still waiting", p.Err())
	}
	const lateKey = "sigterm-after-close"
	late := newBooking(2)
	if adminRefused {
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		if r := postBooking(reqCtx, c, adminBase, lateKey, late); r.err == nil {
			t.Errorf("a booking sent after the admin listener closed was answered: %s", r)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	// Every request accepted before the signal completes with a full response.
	for i, ch := range chats {
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
		if got := text(res.events); got != answer {
			t.Errorf("chat %d: answer %q, want the whole of %q", i, got, answer)
		}
	}
	for i, ch := range searches {
		r := <-ch
		res, err := r.tool()
		if r.err != nil || r.status != http.StatusOK || err != nil || res.IsError || len(res.StructuredContent.Results) == 0 || res.StructuredContent.Degraded != "" {
			t.Errorf("search %d: %s; want 200 with results from the full hybrid search", i, r)
		}
	}
	for i, ch := range slots {
		r := <-ch
		if res, err := r.tool(); r.err != nil || r.status != http.StatusOK || err != nil || res.IsError {
			t.Errorf("get_free_slots %d: %s", i, r)
		}
	}
	var stored created
	if r := <-inFlightCh; r.err != nil || r.status != http.StatusCreated || json.Unmarshal(r.body, &stored) != nil {
		t.Errorf("the booking in flight at the signal: %s; want 201", r)
	} else if err := sameBooking(stored, inFlight); err != nil || stored.Replayed {
		t.Errorf("the booking in flight at the signal came back altered (%v) or replayed: %s", err, r.body)
	}
	burstReplies := make([]reply, burst)
	for i := range burst {
		r := <-burstCh[i]
		burstReplies[i] = r
		switch {
		case r.err != nil && r.status == 0:
			// Refused, or reset before the server accepted it: never seen.
		case r.err == nil && r.status == http.StatusCreated:
		default:
			t.Errorf("burst booking %d: %s; want 201 or a refused connection", i, r)
		}
	}

	select {
	case <-p.Done():
	case <-time.After(time.Until(signalled.Add(shutdownTimeout))):
		t.Fatalf("still running %v after SIGTERM (SHUTDOWN_TIMEOUT)", shutdownTimeout)
	}
	t.Logf("exited %v after SIGTERM: %v", time.Since(signalled).Round(time.Millisecond), p.Err())
	if p.Err() != nil {
		t.Errorf("exit: %v, want 0", p.Err())
	}
	if !refused(pub) || !refused(adm) {
		t.Error("a listener still accepts connections after the process exited")
	}
	stopLoad()
	fastWG.Wait()
	before, failed := 0, 0
	for _, f := range fast {
		switch {
		case f.r.err == nil && f.r.status == http.StatusOK:
			if f.r.start.Before(signalled) {
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
	t.Logf("quick requests: %d answered before the signal, %d in all, %d refused", before, len(fast)-failed, failed)

	// Nothing half-written: each booking is stored whole, or not at all.
	rows := func(key string) []created {
		r, err := monitor.Query(ctx, `SELECT id::text, start_at, end_at, title, attendee, notes FROM bookings WHERE idempotency_key = $1 AND cancelled_at IS NULL`, key)
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(r, func(row pgx.CollectableRow) (created, error) {
			var c created
			err := row.Scan(&c.Booking.ID, &c.Booking.Start, &c.Booking.End, &c.Booking.Title, &c.Booking.Attendee, &c.Booking.Notes)
			return c, err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	checkStored := func(what, key string, b booking, mustExist bool) {
		t.Helper()
		got := rows(key)
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
	checkStored("the booking in flight at the signal", inFlightKey, inFlight, true)
	if got := rows(lateKey); len(got) != 0 {
		t.Errorf("the booking sent after the listener closed was stored: %+v", got)
	}
	for i := range burst {
		checkStored(fmt.Sprintf("burst booking %d", i), burstKeys[i], burstBookings[i], burstReplies[i].err == nil)
	}

	// A retry with the same key against a restarted process: the stored booking
	// (200, replayed), or the booking stored now, once (201).
	p2 := serveBinary(t, vars)
	client := &http.Client{}
	defer client.CloseIdleConnections()
	retry := func(what, key string, b booking) {
		t.Helper()
		before := rows(key)
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		r := postBooking(rctx, client, adminBase, key, b)
		var c created
		if r.err != nil || json.Unmarshal(r.body, &c) != nil {
			t.Errorf("%s, retried: %s", what, r)
			return
		}
		switch {
		case len(before) == 1 && (r.status != http.StatusOK || !c.Replayed || c.Booking.ID != before[0].Booking.ID):
			t.Errorf("%s, retried: %s; want 200, replayed, id %s", what, r, before[0].Booking.ID)
		case len(before) == 0 && (r.status != http.StatusCreated || c.Replayed):
			t.Errorf("%s, retried: %s; want 201, not replayed", what, r)
		}
		if err := sameBooking(c, b); err != nil {
			t.Errorf("%s, retried: %v", what, err)
		}
		if got := rows(key); len(got) != 1 {
			t.Errorf("%s: %d bookings with its key after the retry, want 1", what, len(got))
		}
	}
	retry("the booking in flight at the signal", inFlightKey, inFlight)
	retry("the booking sent after the listener closed", lateKey, late)
	retry("the booking sent after the listener closed, again", lateKey, late)
	for i := range burst {
		retry(fmt.Sprintf("burst booking %d", i), burstKeys[i], burstBookings[i])
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
