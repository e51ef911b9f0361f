// Package testkit holds what the tests of several packages share: a buffer safe for
// concurrent writes, and running the sitetools binary as a deployment runs it. Only
// tests import it.
package testkit

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Buffer is a bytes.Buffer that several goroutines may write to, e.g. a logger's and a
// process's output.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Env is a process environment: vars, and nothing of the test's own besides PATH and
// HOME.
func Env(vars map[string]string) []string {
	out := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	return out
}

// Proc is a running process of the binary.
type Proc struct {
	Cmd  *exec.Cmd
	Out  *Buffer // stdout and stderr together
	done chan struct{}
	err  error // once done is closed
}

// Start runs binary with args and vars. The process is killed when the test ends if it
// still runs, and its output is logged if the test failed.
func Start(t testing.TB, binary string, vars map[string]string, args ...string) *Proc {
	t.Helper()
	p := &Proc{Cmd: exec.Command(binary, args...), Out: &Buffer{}, done: make(chan struct{})}
	p.Cmd.Env = Env(vars)
	p.Cmd.Stdout, p.Cmd.Stderr = p.Out, p.Out
	p.Cmd.WaitDelay = 5 * time.Second
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.Cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.Cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("sitetools %s output:\n%s", strings.Join(args, " "), p.Out.String())
		}
	})
	return p
}

// Done is closed when the process has exited; Err is then its exit error.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is the process's exit error, once Done is closed.
func (p *Proc) Err() error { return p.err }

// Alive returns nil while the process runs, and how it exited after.
func (p *Proc) Alive() error {
	select {
	case <-p.done:
		return fmt.Errorf("exited: %v", p.err)
	default:
		return nil
	}
}

// Stop sends SIGTERM, as a container runtime does, and waits up to 30 s for the exit.
func (p *Proc) Stop(t testing.TB) error {
	t.Helper()
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	return p.Wait(t, 30*time.Second)
}

// Wait waits up to d for the process to exit.
func (p *Proc) Wait(t testing.TB, d time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(d):
		t.Fatalf("sitetools still runs after %v", d)
		return nil
	}
}

// Run runs binary to completion, failing the test on an error, and returns its output.
func Run(t testing.TB, binary string, vars map[string]string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, binary, args...)
	c.Env = Env(vars)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("sitetools %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// UnixClient is an HTTP client whose every request goes to the socket at path.
func UnixClient(path string) *http.Client {
	return &http.Client{
		Timeout: 20 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}},
	}
}

// WaitReady polls url until it answers 200, failing if alive reports an error (the
// service stopped) or after 30 s.
func WaitReady(t testing.TB, client *http.Client, url string, alive func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := alive(); err != nil {
			t.Fatalf("sitetools stopped before it was ready: %v", err)
		}
		resp, err := client.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		if time.Now().After(deadline) {
			t.Fatalf("sitetools not ready after 30s: %v", err)
		}
		<-tick.C
	}
}

// MainWithBinary builds the binary with build into a temporary directory, sets *binary
// to its path, runs the package's tests and exits with their code; a failed build exits
// with 1. It is what a TestMain of a package that runs the binary does.
func MainWithBinary(m *testing.M, name string, binary *string, build func(dst string) error) {
	dir, err := os.MkdirTemp("", "sitetools-"+name+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*binary = dir + "/sitetools"
	if err := build(*binary); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// FreeAddr returns a loopback address with a port that was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Eventually polls cond every 10ms until it holds (true) or d passed (false): for state
// that another process or a background writer reaches on its own, such as a budget's
// settled spend in PostgreSQL.
func Eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}
