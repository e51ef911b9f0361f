package postgres_test

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
)

// TestSpendChallenge: a challenge is spent once, however many try at once; the prune
// deletes it once expired, and keeps the others.
func TestSpendChallenge(t *testing.T) {
	db := pgtest.NewDB(t)
	ctx := context.Background()

	key, err := db.InstanceKey(ctx, "proof_of_work")
	if err != nil || len(key) < 32 {
		t.Fatalf("the proof-of-work key: %d bytes, %v", len(key), err)
	}
	if other, _ := db.InstanceKey(ctx, "answer_ids"); bytes.Equal(other, key) {
		t.Error("the proof of work shares the answer ids' key")
	}

	live := bytes.Repeat([]byte{1}, 32)
	var first atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := db.SpendChallenge(ctx, live, time.Now().Add(time.Minute))
			if err != nil {
				t.Error(err)
			}
			if ok {
				first.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := first.Load(); n != 1 {
		t.Errorf("%d of 8 spent the same challenge, want 1", n)
	}

	expired := bytes.Repeat([]byte{2}, 32)
	if ok, err := db.SpendChallenge(ctx, expired, time.Now().Add(-time.Second)); !ok || err != nil {
		t.Fatalf("SpendChallenge: %v, %v", ok, err)
	}
	got, err := db.Prune(ctx, postgres.Retention{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := (postgres.Pruned{SpentChallenges: 1}); got != want {
		t.Errorf("Prune = %+v; want %+v", got, want)
	}
	// The live one is still spent; the pruned one, expired, would be refused as such.
	if ok, err := db.SpendChallenge(ctx, live, time.Now().Add(time.Minute)); ok || err != nil {
		t.Errorf("the live challenge spent again after the prune: %v, %v", ok, err)
	}
}
