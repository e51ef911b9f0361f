package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
)

// age moves a job's heartbeat back by d (a duration PostgreSQL reads), as if its replica
// had stopped renewing it that long ago.
func age(t *testing.T, db *postgres.DB, id, d string) {
	t.Helper()
	if _, err := db.Pool.Exec(context.Background(), `UPDATE index_syncs SET heartbeat_at = now() - $2::interval WHERE id = $1`, id, d); err != nil {
		t.Fatal(err)
	}
}

// A process restarted in a container has the hostname and pid (1) of the one that was
// killed. It must not renew the dead one's running job as its own (the job would then
// stay "running" for ever), and it takes the job over once its heartbeat is stale.
func TestRestartedProcessTakesOverTheKilledOnesJob(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	killed := postgres.NewIndexSyncs(db)
	job, _, err := killed.Submit(ctx, postgres.SyncRequest{URLs: []string{"https://example.org/a"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := killed.Start(ctx, job.ID); err != nil {
		t.Fatal(err)
	}
	restarted := postgres.NewIndexSyncs(db) // same host name, same pid
	if restarted.Holder() == killed.Holder() {
		t.Fatalf("two processes share the holder %q", killed.Holder())
	}
	if a, b := killed.Holder(), restarted.Holder(); a[:strings.LastIndexByte(a, ':')] != b[:strings.LastIndexByte(b, ':')] {
		t.Fatalf("holders %q and %q should differ only in the instance id", a, b)
	}
	took := 0
	restarted.TookOver = func(n int) { took += n }

	// Just under the bound: the job is still the killed process's, and the restarted
	// one's heartbeat does not renew it.
	age(t, db, job.ID, (postgres.SyncStaleAfter - postgres.SyncHeartbeat).String())
	if err := restarted.Heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	if err := restarted.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := restarted.Get(ctx, job.ID); got.State != "running" || got.Holder != killed.Holder() || took != 0 {
		t.Fatalf("before its heartbeat is stale the job is %s on %s (took %d); want running on the killed holder", got.State, got.Holder, took)
	}
	// Past it: one sweep (every SyncHeartbeat) queues it on the restarted process.
	age(t, db, job.ID, (postgres.SyncStaleAfter + postgres.SyncHeartbeat/2).String())
	if err := restarted.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	next, ok, err := restarted.NextQueued(ctx)
	if err != nil || !ok || next.ID != job.ID || next.Holder != restarted.Holder() || took != 1 {
		t.Fatalf("after the bound: next queued %+v ok=%v err=%v took=%d; want the job, held by the restarted process", next, ok, err, took)
	}
	if err := killed.Start(ctx, job.ID); err == nil {
		t.Fatal("the killed holder could start a job taken over from it")
	}
	if err := restarted.Start(ctx, job.ID); err != nil {
		t.Fatal(err)
	}
	if err := restarted.Finish(ctx, job.ID, "ok", postgres.SyncPages{Updated: 1}, 10, ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := restarted.Get(ctx, job.ID); got.State != "done" || got.Outcome != "ok" {
		t.Fatalf("the job ended %s/%s; want done/ok", got.State, got.Outcome)
	}
}

// A job whose runs stop their replica again and again is failed after the third, with
// the reason; a full sync on the timer whose replica stopped is failed (the timer runs
// the next one).
func TestTakeoverGivesUpAndFailsIntervalRuns(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()
	first := postgres.NewIndexSyncs(db)
	job, _, err := first.Submit(ctx, postgres.SyncRequest{All: true})
	if err != nil {
		t.Fatal(err)
	}
	holder := first
	stale := (postgres.SyncStaleAfter + postgres.SyncHeartbeat).String()
	for run := 1; run <= 3; run++ {
		if err := holder.Start(ctx, job.ID); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		age(t, db, job.ID, stale)
		holder = postgres.NewIndexSyncs(db)
		if err := holder.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got, err := holder.Get(ctx, job.ID)
	if err != nil || got.State != "failed" || !strings.Contains(got.Error, "stopped 3 times") {
		t.Fatalf("after 3 stopped runs the job is %s (%q), err %v; want failed, stopped 3 times", got.State, got.Error, err)
	}

	id, err := first.StartInterval(ctx)
	if err != nil {
		t.Fatal(err)
	}
	age(t, db, id, stale)
	other := postgres.NewIndexSyncs(db)
	if got, _ := other.Get(ctx, id); got.State != "failed" || got.Error != "the replica running it stopped" {
		t.Fatalf("a stale full sync on the timer is %s (%q); want failed", got.State, got.Error)
	}
	if _, ok, _ := other.NextQueued(ctx); ok {
		t.Fatal("a full sync on the timer was queued again")
	}
}
