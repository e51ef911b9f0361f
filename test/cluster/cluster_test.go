package cluster_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
	"github.com/sitetools/sitetools/internal/testkit"
)

// adminToken is every replica's ADMIN_TOKEN: /metrics is on the admin listener only.
const adminToken = "cluster-admin-token-0123456789"

// cluster is n replicas of `sitetools serve` on one database behind nginx. Its methods
// are called from the test's goroutine; URL, Replica and Admin from any.
type cluster struct {
	t        *testing.T
	dbURL    string
	provider *llmtest.Server
	addr     string // nginx's
	nginx    *process
	replicas []*replica
}

// replica is one `sitetools serve`; its addresses stay the same across restarts.
type replica struct {
	vars map[string]string
	proc *testkit.Proc // the running process, or the last one
}

// startCluster migrates a fresh database and ingests the demo site into it through the
// fake embedding provider (which ingest is not charged to the query budget for), starts
// n replicas of `sitetools serve` on it, each on loopback ports of its own, waits until
// each is ready, and starts nginx in front of them. vars are added to every replica's
// environment last (EMBEDDINGS_DAILY_TOKEN_BUDGET, …). Everything stops when the test
// ends.
func startCluster(t *testing.T, n int, vars map[string]string) *cluster {
	t.Helper()
	return startClusterWith(t, n, vars, clusterHooks{})
}

// clusterHooks run between the steps of startClusterWith; nil ones are skipped.
type clusterHooks struct {
	// beforeIngest runs once the database is migrated, before the demo site is
	// ingested through the fake provider (which it may set up, e.g. how it counts).
	beforeIngest func(c *cluster)
	// beforeServe runs once the site is ingested, before any replica starts.
	beforeServe func(c *cluster)
}

// startClusterWith starts a cluster as startCluster does, running hooks between its steps.
func startClusterWith(t *testing.T, n int, vars map[string]string, hooks clusterHooks) *cluster {
	t.Helper()
	c := &cluster{t: t, dbURL: pgtest.NewURL(t), provider: llmtest.NewServer(t, 64)}
	common := map[string]string{
		"DATABASE_URL":          c.dbURL,
		"ADMIN_TOKEN":           adminToken,
		"RATE_LIMIT_PER_MINUTE": "0",
		// nginx, on loopback, sets X-Forwarded-For to the client's address.
		"TRUSTED_PROXIES":       "127.0.0.1/32",
		"EMBEDDINGS_PROVIDER":   "openai",
		"EMBEDDINGS_BASE_URL":   c.provider.BaseURL(),
		"EMBEDDINGS_MODEL":      "fake-embedding",
		"EMBEDDINGS_DIMENSIONS": "64",
		// The cost-guard tests spend the day's limit from one client: no client share and
		// no pacing, unless a test turns them on (fairuse_test.go).
		"LLM_CLIENT_DAILY_SHARE":        "0",
		"EMBEDDINGS_CLIENT_DAILY_SHARE": "0",
		"BUDGET_PACING":                 "off",
	}
	maps.Copy(common, vars)
	testkit.Run(t, binary, common, "migrate")
	if hooks.beforeIngest != nil {
		hooks.beforeIngest(c)
	}
	testkit.Run(t, binary, common, "ingest", "--dir", filepath.Join(repoRoot(), "deploy", "demo", "site"),
		"--base-url", "https://example.com")
	if hooks.beforeServe != nil {
		hooks.beforeServe(c)
	}

	addrs := freeAddrs(t, 2*n+1)
	var upstreams []string
	for i := range n {
		r := &replica{vars: maps.Clone(common)}
		r.vars["LISTEN_ADDR"], r.vars["ADMIN_LISTEN_ADDR"] = addrs[2*i], addrs[2*i+1]
		r.proc = testkit.Start(t, binary, r.vars, "serve")
		c.replicas = append(c.replicas, r)
		upstreams = append(upstreams, r.vars["LISTEN_ADDR"])
	}
	for i := range c.replicas {
		c.waitReady(i)
	}
	c.addr = addrs[2*n]
	c.nginx = startNginx(t, upstreams, c.addr)
	return c
}

// URL is nginx's base URL, the cluster's one origin.
func (c *cluster) URL() string { return "http://" + c.addr }

// Replica is replica i's public base URL, past nginx.
func (c *cluster) Replica(i int) string { return "http://" + c.replicas[i].vars["LISTEN_ADDR"] }

// Admin is replica i's admin base URL (bearer adminToken), where its /metrics is.
func (c *cluster) Admin(i int) string { return "http://" + c.replicas[i].vars["ADMIN_LISTEN_ADDR"] }

// Provider is the fake embedding provider every replica and the ingest use.
func (c *cluster) Provider() *llmtest.Server { return c.provider }

// Kill kills replica i with SIGKILL and returns once the process is gone.
func (c *cluster) Kill(i int) {
	c.t.Helper()
	p := c.replicas[i].proc
	if err := p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		c.t.Fatalf("kill replica %d: %v", i, err)
	}
	c.waitExit(i)
}

// Stop sends replica i SIGTERM, as a container runtime does, and returns its exit error
// once it has exited (nil: it drained and exited 0).
func (c *cluster) Stop(i int) error {
	c.t.Helper()
	p := c.replicas[i].proc
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		c.t.Fatalf("stop replica %d: %v", i, err)
	}
	return c.waitExit(i)
}

// Restart starts replica i again, on the same addresses, and waits until it is ready.
// The replica must have exited.
func (c *cluster) Restart(i int) {
	c.t.Helper()
	r := c.replicas[i]
	if r.proc.Alive() == nil {
		c.t.Fatalf("restart replica %d: it still runs", i)
	}
	r.proc = testkit.Start(c.t, binary, r.vars, "serve")
	c.waitReady(i)
}

// Pid is the process id of replica i's running (or last) process.
func (c *cluster) Pid(i int) int { return c.replicas[i].proc.Cmd.Process.Pid }

// RestartWith stops every replica (SIGTERM, each drains and gives its budget leases
// back), adds vars to their environment, and starts them again on the same addresses.
// Unlike the other methods, it must not run while other goroutines use the cluster.
func (c *cluster) RestartWith(vars map[string]string) {
	c.t.Helper()
	for i, r := range c.replicas {
		if err := c.Stop(i); err != nil {
			c.t.Fatalf("replica %d exited with %v after SIGTERM, want 0", i, err)
		}
		next := maps.Clone(r.vars)
		maps.Copy(next, vars)
		r.vars = next
		c.Restart(i)
	}
}

// DB is a connection to the cluster's database, closed when the test ends.
func (c *cluster) DB(t *testing.T) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// waitExit waits up to 30 s for replica i's process to exit and returns its exit error.
func (c *cluster) waitExit(i int) error {
	c.t.Helper()
	p := c.replicas[i].proc
	select {
	case <-p.Done():
		return p.Err()
	case <-time.After(30 * time.Second):
		c.t.Fatalf("replica %d still runs 30 s after the signal", i)
		return nil
	}
}

// waitReady waits until replica i answers /readyz with 200.
func (c *cluster) waitReady(i int) {
	c.t.Helper()
	r := c.replicas[i]
	client := &http.Client{Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	testkit.WaitReady(c.t, client, c.Replica(i)+"/readyz", r.proc.Alive)
}

// freeAddrs returns n distinct loopback addresses with ports that were free a moment ago.
func freeAddrs(t *testing.T, n int) []string {
	t.Helper()
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		a := testkit.FreeAddr(t)
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

// nginxConf is deploy/proxy/nginx.conf with only its addresses changed: it listens on
// listen, and $sitetools and $site name an upstream group of the replicas' addresses,
// inserted at the top of the http block (a proxy_pass through a variable uses a group
// of that name before it asks the resolver).
//
// The group's servers have max_fails=0. As shipped, nginx resolves the service's name
// for each request and keeps no failures between requests: a request that finds a
// replica refusing connections is passed to the next one, and the next request tries
// the replica again. A group at nginx's defaults (max_fails=1 fail_timeout=10s) would
// instead keep a restarted replica out for 10 s, and a rolling restart that moves on
// when a replica is ready would find all of them out (502, "no live upstreams").
func nginxConf(t *testing.T, upstreams []string, listen string) string {
	t.Helper()
	conf := readFile(t, filepath.Join(repoRoot(), "deploy", "proxy", "nginx.conf"))
	var group strings.Builder
	group.WriteString("http {\n    upstream sitetools_replicas {\n")
	for _, u := range upstreams {
		fmt.Fprintf(&group, "        server %s max_fails=0;\n", u)
	}
	group.WriteString("    }\n")
	for _, r := range []struct{ old, repl string }{
		{"http {\n", group.String()},
		{"listen 8080;", "listen " + listen + ";"},
		{"set $sitetools http://sitetools:8080;", "set $sitetools http://sitetools_replicas;"},
		{"set $site http://sitetools:8080;", "set $site http://sitetools_replicas;"},
	} {
		if strings.Count(conf, r.old) != 1 {
			t.Fatalf("nginx.conf has %d of %q, want 1 to replace", strings.Count(conf, r.old), r.old)
		}
		conf = strings.Replace(conf, r.old, r.repl, 1)
	}
	return conf
}
