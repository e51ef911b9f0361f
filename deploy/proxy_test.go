package deploy_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proxyBinary finds nginx or caddy; `make test` installs both (deploy/dev/proxies.sh).
func proxyBinary(t *testing.T, name string) string {
	t.Helper()
	for _, p := range []string{name, "/usr/sbin/" + name, "/usr/bin/" + name} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	t.Fatalf("%s is not installed: run deploy/dev/proxies.sh (make test does)", name)
	return ""
}

func run(t *testing.T, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// TestNginxConfig: nginx -t accepts deploy/proxy/nginx.conf as it is, with a temporary
// prefix for its pid and temp files, as in the compose file.
func TestNginxConfig(t *testing.T) {
	nginx := proxyBinary(t, "nginx")
	prefix := t.TempDir() + "/"
	run(t, nil, nginx, "-t", "-q", "-p", prefix, "-e", "stderr", "-c", filepath.Join(root(t), "deploy", "proxy", "nginx.conf"))
}

// TestCaddyConfig: caddy validate accepts deploy/proxy/Caddyfile with its defaults and
// with a public site address (automatic HTTPS).
func TestCaddyConfig(t *testing.T) {
	caddy := proxyBinary(t, "caddy")
	for _, env := range [][]string{caddyEnv(t), caddyEnv(t, "SITE_ADDRESS=example.com")} {
		run(t, env, caddy, "validate", "--adapter", "caddyfile",
			"--config", filepath.Join(root(t), "deploy", "proxy", "Caddyfile"))
	}
}

// caddyEnv keeps Caddy's data and config out of the home directory.
func caddyEnv(t *testing.T, extra ...string) []string {
	home := t.TempDir()
	return append([]string{"HOME=" + home, "XDG_DATA_HOME=" + home, "XDG_CONFIG_HOME=" + home}, extra...)
}

// TestProxiesPassThrough runs nginx and Caddy with their configurations against a fake
// sitetools and asserts what sitetools relies on: an event stream reaches the client
// event by event (not buffered until the end), POST bodies and the Host pass unchanged,
// and X-Forwarded-For and X-Real-IP are the client's address, whatever the client claimed.
func TestProxiesPassThrough(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(t *testing.T, upstream, listen string)
	}{
		{"nginx", startNginx},
		{"caddy", startCaddy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newFakeSitetools(t)
			addr := freeAddr(t)
			tc.start(t, strings.TrimPrefix(up.URL, "http://"), addr)
			waitListening(t, addr)
			base := "http://" + addr

			for _, path := range []string{"/api/chat", "/mcp"} {
				t.Run("stream "+path, func(t *testing.T) { checkProxiedStream(t, up, base, addr, path) })
			}

			t.Run("site and catalog", func(t *testing.T) {
				for _, path := range []string{"/", "/services/", "/api/chat/tools", "/webmcp/bridge.js"} {
					resp, err := http.Get(base + path)
					if err != nil {
						t.Fatal(err)
					}
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK || string(b) != "GET "+path {
						t.Errorf("GET %s: %d %q", path, resp.StatusCode, b)
					}
				}
			})
		})
	}
}

// checkProxiedStream: an event stream through the proxy reaches the client event by
// event, and the POST body, Host and client address arrive as sitetools relies on.
func checkProxiedStream(t *testing.T, up *fakeSitetools, base, addr, path string) {
	// The fake holds the second event back until the first one arrived:
	// through a buffering proxy neither the answer's header nor its
	// first event arrive while the stream is open.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+path, strings.NewReader(`{"hello":"stream"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	req.Header.Set("X-Real-IP", "203.0.113.10")
	events := make(chan string)
	errc := make(chan error, 1)
	go func() {
		defer close(events)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			errc <- err
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			errc <- fmt.Errorf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			return
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- line
			}
		}
		errc <- fmt.Errorf("the stream ended: %v", sc.Err()) // why, for whoever waits
	}()
	select {
	case ev := <-events:
		if ev != "first" {
			t.Fatalf("first event %q", ev)
		}
	case err := <-errc:
		t.Fatalf("the first event did not arrive while the stream was open (the proxy buffers?): %v", err)
	}
	up.release()
	if ev, ok := <-events; !ok || ev != "second" {
		t.Fatalf("second event %q, %v", ev, <-errc)
	}
	got := up.last()
	if got.body != `{"hello":"stream"}` || got.method != http.MethodPost {
		t.Errorf("upstream got %s %q", got.method, got.body)
	}
	if got.xff != "127.0.0.1" {
		t.Errorf("X-Forwarded-For %q, want the client's address 127.0.0.1 only", got.xff)
	}
	if got.realIP != "127.0.0.1" {
		t.Errorf("X-Real-IP %q, want the client's address 127.0.0.1, not the one it sent", got.realIP)
	}
	if got.host != addr {
		t.Errorf("Host %q, want %q as the client sent it", got.host, addr)
	}
}

type seen struct{ method, body, xff, realIP, host string }

type fakeSitetools struct {
	*httptest.Server
	mu       sync.Mutex
	requests []seen
	releases chan struct{}
}

// newFakeSitetools answers POST with two server-sent events, the second only after
// release, and GET with its method and path.
func newFakeSitetools(t *testing.T) *fakeSitetools {
	f := &fakeSitetools{releases: make(chan struct{})}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.requests = append(f.requests, seen{r.Method, string(b), strings.Join(r.Header.Values("X-Forwarded-For"), ","),
			strings.Join(r.Header.Values("X-Real-IP"), ","), r.Host})
		f.mu.Unlock()
		if r.Method != http.MethodPost {
			fmt.Fprintf(w, "%s %s", r.Method, r.URL.Path)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		fmt.Fprint(w, "event: message.delta\ndata: first\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-f.releases:
		case <-time.After(10 * time.Second):
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "event: message.done\ndata: second\n\n")
	}))
	t.Cleanup(f.Close)
	return f
}

// release lets the stream in flight send its second event.
func (f *fakeSitetools) release() {
	select {
	case f.releases <- struct{}{}:
	case <-time.After(time.Second):
	}
}

func (f *fakeSitetools) last() seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[len(f.requests)-1]
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitListening(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startNginx runs deploy/proxy/nginx.conf with only its addresses changed: it listens
// on listen and passes every path to upstream instead of compose's sitetools:8080.
func startNginx(t *testing.T, upstream, listen string) {
	startNginxApart(t, upstream, upstream, listen)
}

// eachProxyApart starts nginx and then Caddy, each in front of sitetools and the site
// at upstreams of their own (host:port), and runs f under the proxy's name with its base
// URL.
func eachProxyApart(t *testing.T, sitetools, site string, f func(t *testing.T, base string)) {
	for _, tc := range []struct {
		name  string
		start func(t *testing.T, sitetools, site, listen string)
	}{
		{"nginx", startNginxApart},
		{"caddy", startCaddyApart},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := freeAddr(t)
			tc.start(t, sitetools, site, addr)
			waitListening(t, addr)
			f(t, "http://"+addr)
		})
	}
}

// startNginxApart is startNginx with sitetools and the site at upstreams of their own.
func startNginxApart(t *testing.T, sitetools, site, listen string) {
	conf := string(readFile(t, filepath.Join(root(t), "deploy", "proxy", "nginx.conf")))
	for old, repl := range map[string]string{
		"listen 8080;":                          "listen " + listen + ";",
		"set $sitetools http://sitetools:8080;": "set $sitetools http://" + sitetools + ";",
		"set $site http://sitetools:8080;":      "set $site http://" + site + ";",
	} {
		if !strings.Contains(conf, old) {
			t.Fatalf("nginx.conf has no %q to replace", old)
		}
		conf = strings.Replace(conf, old, repl, 1)
	}
	dir := t.TempDir()
	// Workers may run as another user (nobody, when started as root).
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	startProcess(t, nil, proxyBinary(t, "nginx"), "-p", dir+"/", "-e", "stderr", "-c", path, "-g", "daemon off;")
}

// startCaddy runs deploy/proxy/Caddyfile as it is, configured by its variables.
func startCaddy(t *testing.T, upstream, listen string) {
	startCaddyApart(t, upstream, upstream, listen)
}

// startCaddyApart is startCaddy with sitetools and the site at upstreams of their own.
func startCaddyApart(t *testing.T, sitetools, site, listen string) {
	env := caddyEnv(t, "SITE_ADDRESS=http://"+listen, "SITETOOLS_UPSTREAM="+sitetools, "SITE_UPSTREAM="+site)
	startProcess(t, env, proxyBinary(t, "caddy"), "run", "--adapter", "caddyfile",
		"--config", filepath.Join(root(t), "deploy", "proxy", "Caddyfile"))
}

// startProcess starts a proxy in a process group of its own and, when the test ends,
// stops the whole group (SIGTERM, then SIGKILL): nginx's workers too.
func startProcess(t *testing.T, env []string, name string, args ...string) {
	t.Helper()
	// A file, not a pipe: Wait must not wait for workers that inherited it.
	out, err := os.CreateTemp(t.TempDir(), "output")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	output := func() string {
		b, _ := os.ReadFile(out.Name())
		return string(b)
	}
	t.Cleanup(func() {
		group := -cmd.Process.Pid
		_ = syscall.Kill(group, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			// The master is still there: the group is still ours.
			_ = syscall.Kill(group, syscall.SIGKILL)
			<-done
		}
		out.Close()
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(name), output())
		}
	})
	// A proxy that exits at once has a configuration problem.
	select {
	case err := <-done:
		t.Fatalf("%s exited: %v\n%s", name, err, output())
	case <-time.After(200 * time.Millisecond):
	}
}
