package cluster_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// nginxBinary finds nginx; `make test` installs it (deploy/dev/proxies.sh).
func nginxBinary(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"nginx", "/usr/sbin/nginx", "/usr/bin/nginx"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	t.Fatal("nginx is not installed: run deploy/dev/proxies.sh (make test does)")
	return ""
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// startNginx runs nginx with nginxConf in front of upstreams, listening on listen, and
// returns once it passes /healthz on to a replica.
func startNginx(t *testing.T, upstreams []string, listen string) *process {
	t.Helper()
	dir := t.TempDir()
	// Workers may run as another user (nobody, when started as root).
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(nginxConf(t, upstreams, listen)), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, nginxBinary(t), "-p", dir+"/", "-e", "stderr", "-c", path, "-g", "daemon off;")
	client := &http.Client{Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.done:
			t.Fatalf("nginx exited: %v\n%s", p.err, p.output())
		default:
		}
		resp, err := client.Get("http://" + listen + "/healthz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx on %s passes no /healthz after 20 s: %v\n%s", listen, err, p.output())
		}
		<-tick.C
	}
}

// accessOK is a line of nginx.conf's access log (noaddr) for a 2xx answer.
var accessOK = regexp.MustCompile(`^\S+ "[^"]*" 2\d\d `)

// notOK is nginx's output without the access log's lines for 2xx answers and with the
// connections a down replica refused only counted: its other errors, and the requests
// that failed.
func notOK(output string) string {
	var b strings.Builder
	refused := 0
	for line := range strings.Lines(output) {
		switch {
		case accessOK.MatchString(line):
		case strings.Contains(line, "(111: Connection refused) while connecting to upstream"):
			refused++
		default:
			b.WriteString(line)
		}
	}
	fmt.Fprintf(&b, "(and %d connections refused by a replica that was down)\n", refused)
	return b.String()
}

// process is a program run in a process group of its own.
type process struct {
	cmd  *exec.Cmd
	out  *os.File // stdout and stderr: a file, so that Wait does not wait for workers
	done chan struct{}
	err  error // once done is closed
}

func (p *process) output() string {
	b, _ := os.ReadFile(p.out.Name())
	return string(b)
}

// startProcess starts name in a process group of its own and, when the test ends,
// stops the whole group (SIGTERM, then SIGKILL): nginx's workers too. Its output is
// logged if the test failed.
func startProcess(t *testing.T, name string, args ...string) *process {
	t.Helper()
	out, err := os.CreateTemp(t.TempDir(), "output")
	if err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: exec.Command(name, args...), out: out, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		group := -p.cmd.Process.Pid
		_ = syscall.Kill(group, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			// The leader is still there: the group is still ours.
			_ = syscall.Kill(group, syscall.SIGKILL)
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s output, but for its access log's 2xx lines:\n%s", filepath.Base(name), notOK(p.output()))
		}
		out.Close()
	})
	return p
}
