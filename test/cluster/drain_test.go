package cluster_test

import (
	"fmt"
	"testing"
	"time"
)

// TestDrainLosesNoPost: two replicas behind nginx, and clients sending POSTs through
// nginx without pause — MCP's tools/list, which is quick, and searches. Each replica is
// stopped with SIGTERM and started again three times, in turn. A replica that drains closes
// its listener: connections the kernel had accepted for it are reset, and a request it
// reads after that is closed unanswered. Neither request ran, and nginx passes both on
// to the other replica (a POST only as its configuration allows): every POST gets a 200.
func TestDrainLosesNoPost(t *testing.T) {
	const replicas, rounds = 2, 3
	// Every client is one address, 127.0.0.1: no share of the tool calls per client.
	c := startCluster(t, replicas, map[string]string{"TOOL_MAX_CONCURRENT_PER_CLIENT": "0"})
	loads := []*load{startLoad(c.URL(), 16, []string{"mcp"}), startLoad(c.URL(), 2, []string{"search"})}
	for _, l := range loads {
		t.Cleanup(l.finish)
		waitFor(t, 10*time.Second, "the load did not get going", func() bool { return l.completed() >= 20 })
	}
	for j := range rounds * replicas {
		i := j % replicas
		if err := c.Stop(i); err != nil {
			t.Errorf("replica %d exited with %v after SIGTERM, want 0", i, err)
		}
		c.Restart(i)
		waitFor(t, 30*time.Second, fmt.Sprintf("replica %d served nothing through nginx after its restart", i),
			func() bool { return served(t, c, i) > 0 })
	}
	for _, l := range loads {
		l.finish()
		t.Logf("%s", l.report())
		if n := l.failures(); n > 0 {
			t.Errorf("%d POSTs of %d failed through nginx while replicas drained", n, l.completed())
		}
		if l.ok(l.kinds[0]) == 0 {
			t.Errorf("no %s request succeeded", l.kinds[0])
		}
	}
}
