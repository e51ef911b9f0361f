package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/app"

	"github.com/sitetools/sitetools/internal/postgres/pgtest"
	"github.com/sitetools/sitetools/tools"
)

func unixClient(path string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
}

// TestGracefulShutdown: a request in flight when the service is told to stop completes,
// and Run returns afterwards. The service listens on a Unix socket, created 0600.
func TestGracefulShutdown(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "sitetools.sock")
	// A stale socket from an earlier run is replaced.
	stale, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()

	entered, release := make(chan struct{}), make(chan struct{})
	cfg := testConfig(t, "postgres://unused", map[string]string{"LISTEN_ADDR": "unix:" + sock})
	app, err := app.Wire(cfg, app.Parts{DB: pgtest.NewDB(t), Register: func(r *tools.Registry) error {
		return r.Add(tools.Tool{
			Name: "wait", Description: "Waits until released.", InputSchema: json.RawMessage(`{"type":"object"}`),
			Annotations: tools.Annotations{ReadOnly: true},
			Handler: func(context.Context, json.RawMessage) (*tools.Result, error) {
				close(entered)
				<-release
				return tools.TextResult("done"), nil
			},
		})
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- app.Run(ctx) }()

	client := unixClient(sock)
	type result struct {
		status int
		body   string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		for {
			// Until the listener is up, dialing fails at once; retry.
			resp, err := client.Post("http://sitetools/api/chat/tools", "application/json", strings.NewReader(`{"name":"wait"}`))
			if err != nil && strings.Contains(err.Error(), "connect:") {
				select {
				case <-ctx.Done():
				default:
					time.Sleep(5 * time.Millisecond)
					continue
				}
			}
			if err != nil {
				done <- result{err: err}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			done <- result{status: resp.StatusCode, body: string(b)}
			return
		}
	}()
	<-entered
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket mode %v, err %v", fi.Mode(), err)
	}

	stop() // as SIGTERM does
	select {
	case err := <-runErr:
		t.Fatalf("Run returned with a request in flight: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	r := <-done
	if r.err != nil || r.status != http.StatusOK || !strings.Contains(r.body, "done") {
		t.Fatalf("in-flight request: %+v", r)
	}
	if err := <-runErr; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if _, err := client.Get("http://sitetools/healthz"); err == nil {
		t.Fatal("still serving after shutdown")
	}
}

// TestPrivacy sends distinctive markers in every part of requests and asserts that
// none reaches a log line or a metric, and that no response sets a cookie.
func TestPrivacy(t *testing.T) {
	te := newEnv(t, map[string]string{"RATE_LIMIT_PER_MINUTE": "2", "TRUSTED_PROXIES": "127.0.0.1", "ADMIN_TOKEN": "admin-token-0123456789"})
	markers := []string{"MARKERargQ7", "MARKERkeyZ3", "MARKERqsP1", "MARKERnameW2", "198.51.100.77", "admin-token-0123456789"}
	h := map[string]string{"Idempotency-Key": "MARKERkeyZ3", "X-Forwarded-For": "198.51.100.77", "User-Agent": "MARKERua"}
	var responses []response
	responses = append(responses,
		te.call(t, `{"name":"echo","arguments":{"text":"MARKERargQ7"}}`, h),
		te.call(t, `{"name":"counter.add","arguments":{"n":1,"x":"MARKERargQ7"}}`, h),
		te.call(t, `{"name":"counter.add","arguments":{"n":1}}`, h),
		te.call(t, `{"name":"MARKERnameW2"}`, h),
		te.do(t, http.MethodGet, "/api/chat/tools?q=MARKERqsP1", nil, h),
		te.do(t, http.MethodPost, "/api/chat/tools?q=MARKERqsP1", strings.NewReader(`{"name":"boom"}`), map[string]string{"Content-Type": "application/json"}),
	)
	for _, r := range responses {
		if c := r.header.Get("Set-Cookie"); c != "" {
			t.Fatalf("a response set a cookie: %s", c)
		}
	}
	metrics := te.scrape(t, "admin-token-0123456789")
	logs := te.Logs.String()
	if !strings.Contains(logs, `"route":"/api/chat/tools"`) || !strings.Contains(logs, `"tool":"echo"`) || !strings.Contains(logs, `"channel":"webmcp"`) {
		t.Fatalf("logs lack route, tool or channel:\n%s", logs)
	}
	for _, m := range append(markers, "MARKERua", "127.0.0.1") {
		if strings.Contains(logs, m) {
			t.Errorf("log contains %q:\n%s", m, logs)
		}
		if strings.Contains(metrics, m) {
			t.Errorf("metrics contain %q", m)
		}
	}
}

func (te *testEnv) scrape(t *testing.T, token string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	te.App.AdminHandler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("metrics: status %d: %s", rec.Code, rec.Body.String())
	}
	return rec.Body.String()
}

func TestAdminMetrics(t *testing.T) {
	te := newEnv(t, map[string]string{"ADMIN_TOKEN": "admin-token-0123456789"})
	te.call(t, `{"name":"echo","arguments":{"text":"a"}}`, nil)
	te.call(t, `{"name":"echo","arguments":{}}`, nil)
	te.call(t, `{"name":"range.check"}`, nil)
	adm := newAdminServer(t, te)
	for _, tc := range []struct{ auth string }{{""}, {"Bearer wrong-token-0123456789"}, {"Basic YWRtaW46YWRtaW4="}} {
		req, _ := http.NewRequest(http.MethodGet, adm+"/metrics", nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), `"code":"unauthorized"`) {
			t.Fatalf("auth %q: status %d %s", tc.auth, resp.StatusCode, b)
		}
	}
	m := te.scrape(t, "admin-token-0123456789")
	for _, want := range []string{
		`sitetools_tool_calls_total{channel="webmcp",outcome="ok",tool="echo"} 1`,
		`sitetools_tool_calls_total{channel="webmcp",outcome="invalid_arguments",tool="echo"} 1`,
		`sitetools_tool_calls_total{channel="webmcp",outcome="tool_error",tool="range.check"} 1`,
		`sitetools_tool_call_duration_seconds_count{channel="webmcp",tool="echo"} 2`,
		`sitetools_http_requests_total{method="POST",route="/api/chat/tools",status="200"} 2`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func newAdminServer(t *testing.T, te *testEnv) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: te.App.AdminHandler()}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// TestUnixSocketClientsAreTheProxysForwardedAddresses: behind a reverse proxy on a Unix
// socket, each forwarded address is its own client for the rate limit.
func TestUnixSocketClientsAreTheProxysForwardedAddresses(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	cfg := testConfig(t, "postgres://unused", map[string]string{"LISTEN_ADDR": "unix:" + sock, "RATE_LIMIT_PER_MINUTE": "1"})
	var counter atomic.Int64
	app, err := app.Wire(cfg, app.Parts{DB: pgtest.NewDB(t), Register: func(r *tools.Registry) error { return registerTestTools(r, &counter) }})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Serve(ctx, ln, nil) }()
	t.Cleanup(func() { stop(); <-done })
	client := unixClient(sock)
	// call sends one X-Forwarded-For line a value of xff.
	call := func(xff ...string) int {
		req, _ := http.NewRequest(http.MethodPost, "http://site/api/chat/tools", strings.NewReader(`{"name":"echo","arguments":{"text":"a"}}`))
		req.Header.Set("Content-Type", "application/json")
		for _, line := range xff {
			req.Header.Add("X-Forwarded-For", line)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	got := []int{call("203.0.113.1"), call("198.51.100.9, 203.0.113.2"), call("203.0.113.1"), call("203.0.113.3")}
	if want := []int{200, 200, 429, 200}; !slices.Equal(got, want) {
		t.Fatalf("statuses %v, want %v", got, want)
	}
	// A client's own line, then the proxy's: the proxy's last address is the client.
	// 203.0.113.3 has spent its one call: a forged first line naming a fresh address
	// must not give it another.
	if got := call("198.51.100.77", "203.0.113.3"); got != http.StatusTooManyRequests {
		t.Fatalf("two header lines: status %d, want 429 (the client chose its own address)", got)
	}
	if got := call("203.0.113.3", "203.0.113.4"); got != http.StatusOK {
		t.Fatalf("two header lines, a fresh client: status %d", got)
	}
}
