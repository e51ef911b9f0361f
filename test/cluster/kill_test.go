package cluster_test

import (
	"fmt"
	"testing"
	"time"
)

// TestKilledReplica: after a replica is killed (SIGKILL, no drain), every request that
// starts later is answered by the others through nginx, and the shared budget books
// what they cost; once restarted, the replica serves again.
func TestKilledReplica(t *testing.T) {
	const searches = 20
	c := startCluster(t, 2, map[string]string{"EMBEDDINGS_DAILY_TOKEN_BUDGET": "1000000"})
	before := c.Provider().ReceivedTokens()
	c.Kill(0)
	for i := range searches {
		degraded, err := searchVia(c.URL(), fmt.Sprintf("accessibility audit question %d", i))
		if err != nil || degraded != "" {
			t.Fatalf("search %d with replica 0 dead: degraded %q, %v", i, degraded, err)
		}
	}
	ok := map[string]string{"tool": "search_site", "outcome": "ok"}
	if n := metric(t, c.Admin(1), "sitetools_tool_calls_total", ok); n != searches {
		t.Errorf("replica 1 answered %v searches, want all %d", n, searches)
	}
	charged := int64(c.Provider().ReceivedTokens() - before)
	used, reserved := budgetRow(t, c.DB(t), "embedding")
	t.Logf("the provider received %d tokens for %d searches; the budget has %d used, %d reserved", charged, searches, used, reserved)
	if charged == 0 || used+reserved < charged {
		t.Errorf("the budget books %d used and %d reserved tokens for %d the provider received", used, reserved, charged)
	}

	c.Restart(0)
	n := 0
	waitFor(t, 20*time.Second, "the restarted replica 0 served no search through nginx", func() bool {
		n++
		if _, err := searchVia(c.URL(), fmt.Sprintf("cloud cost review question %d", n)); err != nil {
			t.Fatalf("search after the restart: %v", err)
		}
		return metric(t, c.Admin(0), "sitetools_tool_calls_total", ok) > 0
	})
}
