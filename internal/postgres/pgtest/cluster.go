package pgtest

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/testkit"
)

// Cluster is a PostgreSQL server of one test's own, which the test can stop and start
// to see what an outage does. It is stopped when the test ends.
type Cluster struct {
	t   testing.TB
	env []string
	URL string // of its postgres database
}

// NewCluster starts a private cluster on a free loopback port with
// deploy/dev/postgres.sh (which installs PostgreSQL and pgvector where missing).
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	_, port, _ := net.SplitHostPort(testkit.FreeAddr(t))
	var vars []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TEST_DATABASE_URL=") { // the script would use it instead
			vars = append(vars, kv)
		}
	}
	c := &Cluster{t: t, env: append(vars, "PGWORK="+t.TempDir(), "PGPORT="+port)}
	c.URL = c.run("start")
	t.Cleanup(func() { c.run("stop") })
	return c
}

// Stop stops the server; it returns once the server is down.
func (c *Cluster) Stop() { c.t.Helper(); c.run("stop") }

// Start starts the server again; it returns once the server accepts connections.
func (c *Cluster) Start() { c.t.Helper(); c.run("start") }

func (c *Cluster) run(verb string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	_, self, _, _ := runtime.Caller(0)
	cmd := exec.CommandContext(ctx, filepath.Join(filepath.Dir(self), "..", "..", "..", "deploy", "dev", "postgres.sh"), verb)
	cmd.Env = c.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		c.t.Fatalf("postgres.sh %s: %v\n%s", verb, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}
