package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestRebindingHostOnEveryRoute: on a loopback listener, a Host that is not this machine,
// the site or ALLOWED_HOSTS gets 403 on every public route — the API, the chat, /mcp,
// the pages, the assets, the probes — while the same requests with the site's host, a
// loopback host or an allowed host (also by the former name MCP_ALLOWED_HOSTS) pass it.
func TestRebindingHostOnEveryRoute(t *testing.T) {
	te := newEnv(t, map[string]string{"ALLOWED_HOSTS": "proxy.example", "MCP_ALLOWED_HOSTS": "old-proxy.example"})
	routes := []struct{ method, path, body string }{
		{http.MethodGet, "/api/chat/tools", ""},
		{http.MethodPost, "/api/chat/tools", `{"name":"echo","arguments":{"text":"hi"}}`},
		{http.MethodPost, "/api/chat", `{"conversationId":"c","messages":[{"role":"user","content":"hi"}],"consent":true}`},
		{http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`},
		{http.MethodGet, "/healthz", ""},
		{http.MethodGet, "/readyz", ""},
		{http.MethodGet, "/webmcp/chat.js", ""},
		{http.MethodGet, "/no-such-page", ""},
	}
	for _, host := range []string{"rebind.attacker.example", "rebind.attacker.example:8080", "127.0.0.1.nip.io"} {
		for _, r := range routes {
			// A rebound page's own origin comes with it: same-origin to the attacker's name.
			status, body := hostRequest(t, te, r.method, r.path, r.body, host, "http://"+host)
			if status != http.StatusForbidden || !strings.Contains(body, `"origin_not_allowed"`) {
				t.Errorf("%s %s with Host %s: %d %s; want 403 origin_not_allowed", r.method, r.path, host, status, body)
			}
		}
	}
	for _, host := range []string{"site.example", "localhost:1234", "127.0.0.1", "[::1]:80", "proxy.example", "old-proxy.example"} {
		for _, r := range routes {
			if status, body := hostRequest(t, te, r.method, r.path, r.body, host, ""); status == http.StatusForbidden {
				t.Errorf("%s %s with Host %s: 403 %s", r.method, r.path, host, body)
			}
		}
	}
}

func hostRequest(t *testing.T, te *testEnv, method, path, body, host, origin string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, te.Srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	resp, err := te.Srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(b)
}

// TestSameOriginSchemeOverHTTP: over plain HTTP from an untrusted peer, a page on
// https://<the same host> is not same-origin, even when the request claims
// X-Forwarded-Proto: https; through a trusted proxy that says https, it is.
func TestSameOriginSchemeOverHTTP(t *testing.T) {
	untrusted := newEnv(t, nil)
	trusted := newEnv(t, map[string]string{"TRUSTED_PROXIES": "127.0.0.1/32,::1/128"})
	for _, tc := range []struct {
		name  string
		te    *testEnv
		proto string
		want  int
	}{
		{"untrusted peer, claimed https", untrusted, "https", http.StatusForbidden},
		{"untrusted peer, no claim", untrusted, "", http.StatusForbidden},
		{"trusted proxy says https", trusted, "https", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, tc.te.Srv.URL+"/api/chat/tools", nil)
			req.Host = "localhost:4321"
			req.Header.Set("Origin", "https://localhost:4321")
			if tc.proto != "" {
				req.Header.Set("X-Forwarded-Proto", tc.proto)
			}
			resp, err := tc.te.Srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}
