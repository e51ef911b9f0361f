// Package e2e_test runs the real sitetools binary, built by the Dockerfile's own
// `go build` command, as a deployment runs it: on a Unix socket, and as several
// replicas sharing one database.
package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binary is sitetools, built once for the package by TestMain.
var binary string

// buildVersion is the VERSION build argument the binary is built with.
const buildVersion = "e2e-test"

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sitetools-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "sitetools")
	if err := buildLikeDockerfile(binary); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// repoRoot is the repository's root directory.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// dockerfileBuildCommand returns the shell command of the Dockerfile's RUN instruction
// that runs `go build`, without the RUN keyword and its --mount flags, and the path
// it writes the binary to (-o).
func dockerfileBuildCommand() (cmd, out string, err error) {
	b, err := os.ReadFile(filepath.Join(repoRoot(), "Dockerfile"))
	if err != nil {
		return "", "", err
	}
	// Instructions, with continuation lines joined.
	joined := regexp.MustCompile(`\\\n\s*`).ReplaceAllString(string(b), "")
	var runs []string
	for _, line := range strings.Split(joined, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "RUN "); ok && strings.Contains(rest, "go build") {
			runs = append(runs, rest)
		}
	}
	if len(runs) != 1 {
		return "", "", fmt.Errorf("Dockerfile: %d RUN instructions with go build, want 1", len(runs))
	}
	cmd = strings.TrimSpace(regexp.MustCompile(`--mount=\S+\s*`).ReplaceAllString(runs[0], ""))
	m := regexp.MustCompile(`\s-o\s+(\S+)`).FindStringSubmatch(cmd)
	if m == nil {
		return "", "", fmt.Errorf("Dockerfile: go build has no -o: %s", cmd)
	}
	return cmd, m[1], nil
}

// buildLikeDockerfile runs the Dockerfile's build command in the repository's root,
// with the VERSION build argument set and -o pointing at dst.
func buildLikeDockerfile(dst string) error {
	cmd, out, err := dockerfileBuildCommand()
	if err != nil {
		return err
	}
	cmd = strings.Replace(cmd, " -o "+out, " -o "+dst, 1)
	c := exec.Command("sh", "-c", cmd)
	c.Dir = repoRoot()
	c.Env = append(os.Environ(), "VERSION="+buildVersion)
	if b, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v\n%s", cmd, err, b)
	}
	return nil
}

// env is a process environment: nothing of the test's own besides PATH and HOME.
func env(vars map[string]string) []string {
	out := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	return out
}

// proc is a running sitetools process.
type proc struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error // once done is closed
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs the binary with args and vars; it is killed when the test ends if it is
// still running, and its output is logged if the test failed.
func start(t *testing.T, vars map[string]string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(binary, args...), out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = env(vars)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.WaitDelay = 5 * time.Second
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("sitetools %s output:\n%s", strings.Join(args, " "), p.out.String())
		}
	})
	return p
}

// stop sends SIGTERM, as a container runtime does, and waits for the exit.
func (p *proc) stop(t *testing.T) error {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.err
	case <-time.After(30 * time.Second):
		t.Fatal("sitetools did not stop within 30s of SIGTERM")
		return nil
	}
}

// wait waits for the process to exit by itself.
func (p *proc) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(d):
		t.Fatalf("sitetools still runs after %v", d)
		return nil
	}
}

// runCmd runs the binary to completion and returns its output.
func runCmd(t *testing.T, vars map[string]string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, binary, args...)
	c.Env = env(vars)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("sitetools %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// unixClient is an HTTP client whose every request goes to the socket at path.
func unixClient(path string) *http.Client {
	return &http.Client{
		Timeout: 20 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}},
	}
}

// waitReady polls /readyz until it answers 200, failing if the process exits first.
func waitReady(t *testing.T, p *proc, c *http.Client) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-p.done:
			t.Fatalf("sitetools exited before it was ready: %v", p.err)
		default:
		}
		resp, err := c.Get("http://sitetools/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("sitetools not ready after 30s: %v", err)
		}
		time.Sleep(25 * time.Millisecond)
	}
}
