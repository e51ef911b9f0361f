package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is a server the bench runs as a process of its own: the real `sitetools serve`
// binary, or the Node peer. Its CPU time and memory are read from /proc, so that they
// are the server's alone, without the load generator.
type proc struct {
	label string
	addr  string
	cmd   *exec.Cmd
	// log is the file the process writes its output to: a file rather than a pipe, so
	// that a busy load generator can never block the server's request log.
	log  *os.File
	done chan struct{} // closed when the process has exited
	err  error         // its exit status, once done
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat: 100 on Linux.
const clockTicks = 100

// startProc starts argv in dir with exactly env (nothing inherited but what env holds),
// its output into a file in logDir, and waits until ready says it serves.
func startProc(ctx context.Context, label, dir, logDir string, argv, env []string, addr string, ready func(addr string) error) (*proc, error) {
	log, err := os.CreateTemp(logDir, "proc-*.log")
	if err != nil {
		return nil, err
	}
	p := &proc{label: label, addr: addr, log: log, done: make(chan struct{})}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Dir = dir
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = log, log
	if err := p.cmd.Start(); err != nil {
		p.removeLog()
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := ready(addr)
		if err == nil {
			return p, nil
		}
		select {
		case <-p.done:
			out := p.head()
			p.removeLog()
			return nil, fmt.Errorf("%s exited before it was ready (%v):\n%s", label, p.err, out)
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			out := p.head()
			p.stop()
			return nil, fmt.Errorf("%s not ready after 60s (%v):\n%s", label, err, out)
		}
	}
}

// stop sends SIGTERM and waits for the exit, killing the process after 10 s, and
// removes its output.
func (p *proc) stop() {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	p.removeLog()
}

// head is the start of the process's output, for an error report.
func (p *proc) head() string {
	b := make([]byte, 16<<10)
	n, _ := p.log.ReadAt(b, 0)
	return string(b[:n])
}

func (p *proc) removeLog() {
	p.log.Close()
	os.Remove(p.log.Name())
}

// cpu is the process's user and system CPU time so far, all its threads.
func (p *proc) cpu() time.Duration {
	d, _ := pidCPU(p.cmd.Process.Pid)
	return d
}

// pidCPU is the user and system CPU time so far of the process pid on this machine (a
// PostgreSQL backend too), in clock ticks; false when /proc does not tell.
func pidCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil || pid <= 0 {
		return 0, false
	}
	// The command name, in parentheses, may hold spaces: fields are counted after it.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, false
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / clockTicks, true
}

// memory returns a field of /proc/PID/status in bytes: VmHWM (peak resident set) or
// VmRSS (resident set now).
func (p *proc) memory(field string) int64 {
	return statusBytes(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid), field)
}

func statusBytes(path, field string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != field {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		return n << 10
	}
	return 0
}

func megabytes(b int64) string {
	if b <= 0 {
		return "?"
	}
	return fmt.Sprintf("%.1f MB", float64(b)/(1<<20))
}

// freeAddr returns a loopback address with a port free at the time of the call.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// httpReady returns a readiness check: GET path answers status.
func httpReady(path string, status int) func(addr string) error {
	client := &http.Client{Timeout: 2 * time.Second}
	return func(addr string) error {
		resp, err := client.Get("http://" + addr + path)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != status {
			return fmt.Errorf("GET %s: %d, want %d", path, resp.StatusCode, status)
		}
		return nil
	}
}

// serveBinary is the `sitetools serve` the deployed scenarios run: built once per run
// from the module, as `make build` builds it but without -trimpath (which would compile
// every dependency a second time); the binary's code is the same.
type serveBinary struct {
	path  string
	root  string
	dir   string // where the processes' output goes
	dbURL string
	took  time.Duration
}

func buildServe(ctx context.Context, dir, dbURL string, progress io.Writer) (*serveBinary, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("building sitetools: %w", err)
	}
	bin := &serveBinary{path: filepath.Join(dir, "sitetools"), root: root, dir: dir, dbURL: dbURL}
	fmt.Fprintf(progress, "building %s (go build -ldflags '-s -w' .)\n", bin.path)
	begin := time.Now()
	cmd := exec.CommandContext(ctx, goCmd, "build", "-ldflags", "-s -w", "-o", bin.path, ".")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build: %w\n%s", err, out)
	}
	bin.took = time.Since(begin)
	return bin, nil
}

// env is the environment of a served subprocess: the bench database with the demo
// site, the example schedule (as `make demo`), no admin listener, logging at info into
// a file, and extra on top. Nothing else of this process's environment is passed on.
func (b *serveBinary) env(addr string, extra map[string]string) []string {
	vars := map[string]string{
		"DATABASE_URL":          b.dbURL,
		"LISTEN_ADDR":           addr,
		"ADMIN_LISTEN_ADDR":     "off",
		"RATE_LIMIT_PER_MINUTE": "0",
		// The load comes from one address: no client's share of the caps.
		"TOOL_MAX_CONCURRENT_PER_CLIENT": "0",
		"CHAT_MAX_CONCURRENT_PER_CLIENT": "0",
		"AVAILABILITY_CONFIG":            slotsSchedule,
		"SHUTDOWN_TIMEOUT":               "5s",
		"LOG_LEVEL":                      "info",
	}
	for k, v := range extra {
		vars[k] = v
	}
	env := []string{"PATH=" + os.Getenv("PATH")}
	if h := os.Getenv("HOME"); h != "" {
		env = append(env, "HOME="+h)
	}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return env
}

// start runs `sitetools serve` with extra settings and waits for /readyz.
func (b *serveBinary) start(ctx context.Context, extra map[string]string) (*proc, error) {
	if b == nil {
		return nil, errors.New("the sitetools binary was not built")
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	return startProc(ctx, "sitetools serve", b.root, b.dir, []string{b.path, "serve"}, b.env(addr, extra), addr, httpReady("/readyz", http.StatusOK))
}
