package e2e_test

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/postgres/pgtest"
	"github.com/sitetools/sitetools/internal/testkit"
)

// TestUnixSocket: with LISTEN_ADDR=unix:/path, sitetools serves on a socket only its
// own user can use (0600). The socket left behind by a killed process is replaced at the
// next start; a socket in use by a live process is not taken over.
func TestUnixSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	vars := map[string]string{
		"DATABASE_URL":      pgtest.NewURL(t),
		"LISTEN_ADDR":       "unix:" + sock,
		"ADMIN_LISTEN_ADDR": "off",
	}
	client := testkit.UnixClient(sock)

	leaveStaleSocket(t, vars, client, sock)

	p := testkit.Start(t, binary, vars, "serve")
	waitReady(t, p, client)
	fi, err := os.Lstat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want a socket with mode 0600", fi.Mode())
	}

	t.Run("requests", func(t *testing.T) { checkSocketRequests(t, client) })

	t.Run("socket in use", func(t *testing.T) {
		intruder := testkit.Start(t, binary, vars, "serve")
		if err := intruder.Wait(t, 30*time.Second); err == nil {
			t.Fatal("a second process started on a socket in use")
		}
		if out := intruder.Out.String(); !strings.Contains(out, "in use") {
			t.Errorf("the refusal does not say the socket is in use:\n%s", out)
		}
		resp, err := client.Get("http://sitetools/healthz")
		if err != nil {
			t.Fatalf("the first process stopped serving: %v", err)
		}
		resp.Body.Close()
	})

	// A graceful stop removes the socket.
	if err := p.Stop(t); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("after a graceful stop the socket is still there (%v)", err)
	}
}

// leaveStaleSocket starts a process and kills it without a chance to clean up, which
// leaves its socket file behind, accepting no connection.
func leaveStaleSocket(t *testing.T, vars map[string]string, client *http.Client, sock string) {
	t.Helper()
	first := testkit.Start(t, binary, vars, "serve")
	waitReady(t, first, client)
	if err := first.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.Done()
	if fi, err := os.Lstat(sock); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("after SIGKILL: %v, mode %v; want a stale socket file left behind", err, fi)
	}
	if c, err := net.Dial("unix", sock); err == nil {
		c.Close()
		t.Fatal("the stale socket still accepts connections")
	}
}

// checkSocketRequests calls the service over the socket: health, the catalog, a search.
func checkSocketRequests(t *testing.T, client *http.Client) {
	resp, err := client.Get("http://sitetools/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz: %d", resp.StatusCode)
	}
	resp, err = client.Get("http://sitetools/api/chat/tools")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var catalog struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&catalog); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/api/chat/tools: %d, %v", resp.StatusCode, err)
	}
	var names []string
	for _, tool := range catalog.Tools {
		names = append(names, tool.Name)
	}
	if !strings.Contains(strings.Join(names, " "), "search_site") {
		t.Errorf("tools %v, want search_site among them", names)
	}
	call, err := client.Post("http://sitetools/api/chat/tools", "application/json",
		strings.NewReader(`{"name":"search_site","arguments":{"query":"accessibility"}}`))
	if err != nil {
		t.Fatal(err)
	}
	call.Body.Close()
	if call.StatusCode != http.StatusOK {
		t.Errorf("POST /api/chat/tools: %d", call.StatusCode)
	}
}
