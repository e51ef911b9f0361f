package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/sitetools/sitetools/internal/app"
	"github.com/sitetools/sitetools/internal/logs"

	"github.com/sitetools/sitetools/internal/config"

	"github.com/jackc/pgx/v5"

	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/tools"
	"github.com/sitetools/sitetools/tools/appointments"
)

// The get_free_slots scenario: 31 days over 10 000 bookings, all inside the range, drawn
// as tools/appointments' BenchmarkFreeSlots31Days10kBookings draws them, in PostgreSQL in
// a database of their own. The schedule is the example one serve loads through
// AVAILABILITY_CONFIG; the clock is fixed so that the range stays inside the horizon.
const (
	slotsDatabase = "sitetools_bench_slots"
	slotsSchedule = "deploy/availability.example.yaml"
	slotsBookings = 10_000
	slotsDays     = 31
	slotsGoal     = 2 * time.Millisecond  // p99 of FreeSlots with the busy time loaded
	slotsFrom     = "2027-03-01"          // a Monday, in the schedule's zone
	slotsTo       = "2027-03-31"          // inclusive: 31 days
	slotsNow      = "2027-02-26T09:00:00" // the fixed clock, in the schedule's zone
	// slotsGenerator names how the bookings follow; change it with the code.
	slotsGenerator = "pcg(1, 2): start = from + IntN(31·24·60) min, length 5 + IntN(25) min"
)

func slotsName() string {
	return fmt.Sprintf("get_free_slots, %d days over %s bookings, 1 conn", slotsDays, thousands(slotsBookings))
}

// slotsParts is the get_free_slots service: its own database, pool and server.
type slotsParts struct {
	db       *postgres.DB
	srv      *http.Server
	addr     string
	reused   bool
	busyRows int
	sched    *appointments.Schedule
	q        appointments.Query
	busy     []appointments.Interval
}

func (p *slotsParts) close() {
	if p.srv != nil {
		shutdown(p.srv)
	}
	p.db.Close()
}

// startSlots loads the schedule, fills the bench's bookings database, starts the service
// with get_free_slots on it, and loads the busy time exactly as the tool asks its source
// for it.
func startSlots(ctx context.Context, adminURL string) (*slotsParts, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	sched, from, to, now, err := slotsInput(root)
	if err != nil {
		return nil, err
	}
	dbURL, err := createDatabase(ctx, adminURL, slotsDatabase)
	if err != nil {
		return nil, err
	}
	if _, err := postgres.Migrate(ctx, dbURL); err != nil {
		return nil, err
	}
	cfg, err := inProcessConfig(root, dbURL, nil)
	if err != nil {
		return nil, err
	}
	db, err := postgres.Open(ctx, cfg.DatabaseURL, cfg.DatabaseMaxConns)
	if err != nil {
		return nil, err
	}
	p := &slotsParts{db: db, sched: sched, q: appointments.Query{From: from, To: to, Now: now}}
	if err := p.start(ctx, cfg, from, now); err != nil {
		p.close()
		return nil, err
	}
	// The busy time exactly as the tool asks its source for it, loaded once.
	lo := from.Add(-sched.BufferBefore - sched.BufferAfter - 24*time.Hour)
	hi := to.Add(sched.BufferBefore + sched.BufferAfter + 24*time.Hour)
	if p.busy, err = postgres.NewBookings(db).Busy(ctx, lo, hi, sched.Location); err != nil {
		p.close()
		return nil, err
	}
	p.busyRows = len(p.busy)
	return p, nil
}

// slotsInput is the example schedule and the bench's fixed range and clock in its zone.
func slotsInput(root string) (sched *appointments.Schedule, from, to, now time.Time, err error) {
	f, err := os.Open(filepath.Join(root, slotsSchedule))
	if err != nil {
		return nil, from, to, now, err
	}
	sched, err = appointments.LoadSchedule(f)
	f.Close()
	if err != nil {
		return nil, from, to, now, fmt.Errorf("%s: %w", slotsSchedule, err)
	}
	loc := sched.Location
	from, err1 := time.ParseInLocation(time.DateOnly, slotsFrom, loc)
	to, err2 := time.ParseInLocation(time.DateOnly, slotsTo, loc)
	now, err3 := time.ParseInLocation("2006-01-02T15:04:05", slotsNow, loc)
	if err1 != nil || err2 != nil || err3 != nil {
		return nil, from, to, now, fmt.Errorf("slots dates: %v %v %v", err1, err2, err3)
	}
	return sched, from, to.AddDate(0, 0, 1), now, nil // a date as the end includes that day, as the tool reads it
}

// start fills the bookings and serves get_free_slots on them with the clock at now.
func (p *slotsParts) start(ctx context.Context, cfg config.Config, from, now time.Time) error {
	var err error
	if p.reused, err = ensureBookings(ctx, p.db, from); err != nil {
		return err
	}
	bookings := postgres.NewBookings(p.db)
	avail := &appointments.Availability{Schedule: p.sched, Sources: []appointments.BusySource{bookings}, Now: func() time.Time { return now }}
	tool, err := avail.Tool()
	if err != nil {
		return err
	}
	logger := slog.New(logs.NewJSON(io.Discard, slog.LevelInfo)) // serve's logger, writing nowhere
	app, err := app.Wire(cfg, app.Parts{DB: p.db, Logger: logger, Bookings: bookings,
		Register: func(r *tools.Registry) error { return r.Add(tool) }})
	if err != nil {
		return err
	}
	p.srv, p.addr, err = serve(app.Handler(), "")
	return err
}

// slotsScenario sets up the bookings and a service with get_free_slots, built as serve
// builds it from AVAILABILITY_CONFIG (the schedule, Bookings as the busy source) except
// for the fixed clock, and compares the whole HTTP call with FreeSlots alone, on the busy
// intervals the same source returns, loaded once. The goal is on FreeSlots' p99.
func slotsScenario(ctx context.Context, adminURL string) (scenario, func(), error) {
	p, err := startSlots(ctx, adminURL)
	if err != nil {
		return scenario{}, nil, err
	}
	sched, q, busy, loc := p.sched, p.q, p.busy, p.sched.Location
	args, err := json.Marshal(map[string]any{"name": "get_free_slots", "arguments": map[string]any{"from": slotsFrom, "to": slotsTo}})
	if err != nil {
		p.close()
		return scenario{}, nil, err
	}
	subject := target{label: "sitetools", addr: p.addr, want: http.StatusOK,
		req: request{method: http.MethodPost, path: "/api/chat/tools", body: args,
			header: http.Header{"Accept": {"application/json"}, "Content-Type": {"application/json"}}}}
	// Beside its wall-clock latency, each call's CPU time on its thread: what the
	// computation costs without the time other work on the machine takes from it.
	var mu sync.Mutex
	var cpuTimes []time.Duration
	baseline := target{label: "FreeSlots", do: func(context.Context) error {
		runtime.LockOSThread()
		c0, ok0 := threadCPU()
		appointments.FreeSlots(sched, q, busy)
		c1, ok1 := threadCPU()
		runtime.UnlockOSThread()
		if ok0 && ok1 {
			mu.Lock()
			cpuTimes = append(cpuTimes, c1-c0)
			mu.Unlock()
		}
		return nil
	}}
	sc := scenario{
		name: slotsName(),
		about: fmt.Sprintf("get_free_slots through the sitetools public API (POST /api/chat/tools: validation, Bookings.Busy "+
			"reading the range's bookings from PostgreSQL, FreeSlots, RFC 3339 output, output schema check) vs "+
			"appointments.FreeSlots alone on the same busy intervals loaded once; the schedule is %s, the clock fixed at %s %s",
			slotsSchedule, slotsNow, loc),
		latency:  true,
		conns:    1,
		subject:  subject,
		baseline: baseline,
		judge:    func(r result) bool { return r.baseline.p99 > 0 && r.baseline.p99 < slotsGoal },
		goalText: "FreeSlots p99 < " + duration(slotsGoal),
		after: func() []string {
			mu.Lock()
			defer mu.Unlock()
			if len(cpuTimes) == 0 {
				return nil
			}
			slices.Sort(cpuTimes)
			return []string{fmt.Sprintf("FreeSlots' CPU time per call on its own thread (CLOCK_THREAD_CPUTIME_ID, warm-up included, %d calls): "+
				"p50 %s, p99 %s; wall-clock p99 above it is time the thread waited for a core (other work on the machine) or for the GC",
				len(cpuTimes), duration(percentile(cpuTimes, 50)), duration(percentile(cpuTimes, 99)))}
		},
		check: func() ([]string, error) {
			resp, body, err := probe(subject)
			if err != nil {
				return nil, err
			}
			var out struct {
				IsError           bool                `json:"isError"`
				StructuredContent appointments.Output `json:"structuredContent"`
			}
			if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &out) != nil || out.IsError {
				return nil, fmt.Errorf("get_free_slots: status %d: %.300s", resp.StatusCode, body)
			}
			slots, truncated := appointments.FreeSlots(sched, q, busy)
			want := mapSlice(slots, func(s appointments.Slot) appointments.OutputSlot {
				return appointments.OutputSlot{Start: s.Start.In(loc).Format(time.RFC3339), End: s.End.In(loc).Format(time.RFC3339)}
			})
			if !slices.Equal(out.StructuredContent.Slots, want) || out.StructuredContent.Truncated != truncated {
				return nil, fmt.Errorf("parity: get_free_slots returns %d slots, FreeSlots %d", len(out.StructuredContent.Slots), len(want))
			}
			table := "loaded in this run"
			if p.reused {
				table = "reused"
			}
			return []string{
				fmt.Sprintf("both give the same %d free slots (truncated %v) for %s..%s (%d days): %s bookings drawn by %q, "+
					"all inside the range, so the window is booked solid and the work is reading, extending by the buffers "+
					"and merging the busy time; %s.bookings %s, %d busy intervals per call",
					len(want), truncated, slotsFrom, slotsTo, slotsDays, thousands(slotsBookings), slotsGenerator, slotsDatabase, table, p.busyRows),
				"FreeSlots runs as tools/appointments' BenchmarkFreeSlots31Days10kBookings does, one call per iteration on one goroutine",
			}, nil
		},
	}
	return sc, p.close, nil
}

// ensureBookings makes the bookings table hold exactly the bench's bookings and reports
// whether it already did.
func ensureBookings(ctx context.Context, db *postgres.DB, from time.Time) (bool, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	type iv struct{ start, end time.Time }
	rows := make([]iv, slotsBookings)
	var sum int64
	for i := range rows {
		start := from.Add(time.Duration(rng.IntN(slotsDays*24*60)) * time.Minute)
		rows[i] = iv{start, start.Add(time.Duration(5+rng.IntN(25)) * time.Minute)}
		sum += rows[i].start.Unix() + rows[i].end.Unix()
	}
	var n, got int64
	if err := db.Pool.QueryRow(ctx, `SELECT count(*), coalesce(sum(extract(epoch FROM start_at)::bigint + extract(epoch FROM end_at)::bigint), 0)::bigint
		FROM bookings WHERE cancelled_at IS NULL`).Scan(&n, &got); err != nil {
		return false, err
	}
	var all int64
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM bookings`).Scan(&all); err != nil {
		return false, err
	}
	if n == slotsBookings && all == n && got == sum {
		return true, nil
	}
	if _, err := db.Pool.Exec(ctx, `TRUNCATE bookings`); err != nil {
		return false, err
	}
	i := 0
	_, err := db.Pool.CopyFrom(ctx, pgx.Identifier{"bookings"}, []string{"start_at", "end_at"}, pgx.CopyFromFunc(func() ([]any, error) {
		if i == len(rows) {
			return nil, nil
		}
		i++
		return []any{rows[i-1].start, rows[i-1].end}, nil
	}))
	if err != nil {
		return false, fmt.Errorf("COPY bookings: %w", err)
	}
	_, err = db.Pool.Exec(ctx, `ANALYZE bookings`)
	return false, err
}
