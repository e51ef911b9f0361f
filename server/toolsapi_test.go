package server_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sitetools/sitetools/tools"
)

func TestListTools(t *testing.T) {
	te := newEnv(t, nil)
	r := te.do(t, http.MethodGet, "/api/chat/tools", nil, nil)
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var got struct {
		Tools []tools.Definition `json:"tools"`
	}
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range got.Tools {
		names = append(names, d.Name)
	}
	if diff := cmp.Diff([]string{"boom", "counter.add", "echo", "range.check"}, names); diff != "" {
		t.Fatalf("names (-want +got):\n%s", diff)
	}
	if !strings.Contains(string(r.body), `"annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false}`) {
		t.Fatalf("annotations not explicit: %s", r.body)
	}
	etag := r.header.Get("ETag")
	if !strings.HasPrefix(etag, `"`) || r.header.Get("Cache-Control") == "" || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("headers: %v", r.header)
	}
	if r.header.Get("Set-Cookie") != "" {
		t.Fatal("a cookie was set")
	}
	again := te.do(t, http.MethodGet, "/api/chat/tools", nil, nil)
	if string(again.body) != string(r.body) || again.header.Get("ETag") != etag {
		t.Fatal("the catalog differs between two requests")
	}
	for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
		nm := te.do(t, http.MethodGet, "/api/chat/tools", nil, map[string]string{"If-None-Match": inm})
		if nm.status != http.StatusNotModified || len(nm.body) != 0 || nm.header.Get("ETag") != etag {
			t.Fatalf("If-None-Match %s: status %d, body %q", inm, nm.status, nm.body)
		}
	}
	if stale := te.do(t, http.MethodGet, "/api/chat/tools", nil, map[string]string{"If-None-Match": `"stale"`}); stale.status != http.StatusOK {
		t.Fatalf("stale If-None-Match: status %d", stale.status)
	}
}

func TestCallTool(t *testing.T) {
	te := newEnv(t, nil)
	r := te.call(t, `{"name":"echo","arguments":{"text":"ab","count":2}}`, nil)
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	want := `{"content":[{"type":"text","text":"{\"text\":\"abab\"}"}],"structuredContent":{"text":"abab"},"isError":false}`
	if strings.TrimSpace(string(r.body)) != want {
		t.Fatalf("body\n got %s\nwant %s", r.body, want)
	}
	// A failure for the model to act on is a 200 with isError.
	r = te.call(t, `{"name":"range.check"}`, map[string]string{"Content-Type": "application/json; charset=utf-8"})
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"isError":true`) || !strings.Contains(string(r.body), "the range ends before it starts") {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
}

// TestErrorTable drives every row of the design's error table that this service can
// reach through real HTTP and checks status, code and the one body shape.
func TestErrorTable(t *testing.T) {
	te := newEnv(t, nil)
	big := `{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 64<<10) + `"}}`
	for _, tc := range []struct {
		name        string
		method      string
		body        string
		header      map[string]string
		wantStatus  int
		wantCode    string
		wantMessage string
		wantDetails []tools.Detail
	}{
		{name: "invalid JSON", body: `{"name":`, wantStatus: 400, wantCode: "malformed_request", wantMessage: "not valid JSON"},
		{name: "empty body", body: ``, wantStatus: 400, wantCode: "malformed_request"},
		{name: "JSON array", body: `[{"name":"echo"}]`, wantStatus: 400, wantCode: "malformed_request", wantMessage: "must be a JSON object"},
		{name: "JSON string", body: `"echo"`, wantStatus: 400, wantCode: "malformed_request", wantMessage: "must be a JSON object"},
		{name: "trailing data", body: `{"name":"echo"} {}`, wantStatus: 400, wantCode: "malformed_request"},
		{name: "name missing", body: `{"arguments":{}}`, wantStatus: 400, wantCode: "malformed_request", wantMessage: `"name" is required`},
		{name: "name not a string", body: `{"name":42}`, wantStatus: 400, wantCode: "malformed_request", wantMessage: `"name" must be a string`},
		{name: "name null", body: `{"name":null}`, wantStatus: 400, wantCode: "malformed_request", wantMessage: `"name" must be a string`},
		{name: "name empty", body: `{"name":""}`, wantStatus: 400, wantCode: "malformed_request"},
		{name: "unknown top-level field", body: `{"name":"echo","arguments":{},"extra":1}`, wantStatus: 400, wantCode: "malformed_request", wantMessage: `unknown field "extra"`},
		{name: "arguments not an object", body: `{"name":"echo","arguments":[1]}`, wantStatus: 400, wantCode: "malformed_request", wantMessage: `"arguments" must be a JSON object`},
		{name: "argument of the wrong type", body: `{"name":"echo","arguments":{"text":7}}`, wantStatus: 400, wantCode: "invalid_arguments",
			wantDetails: []tools.Detail{{Pointer: "/text", Message: "got number, want string"}}},
		{name: "two bad fields, two details", body: `{"name":"echo","arguments":{"text":"` + strings.Repeat("y", 51) + `","count":9}}`, wantStatus: 400, wantCode: "invalid_arguments",
			wantDetails: []tools.Detail{{Pointer: "/count", Message: "maximum: got 9, want 5"}, {Pointer: "/text", Message: "maxLength: got 51, want 50"}}},
		{name: "a NUL character, which PostgreSQL cannot store", body: `{"name":"echo","arguments":{"text":"a\u0000b"}}`, wantStatus: 400, wantCode: "invalid_arguments"},
		{name: "a number whose exact value costs more than the call", body: `{"name":"echo","arguments":{"text":"a","count":1e999999}}`, wantStatus: 400, wantCode: "invalid_arguments"},
		{name: "missing required argument", body: `{"name":"echo","arguments":{}}`, wantStatus: 400, wantCode: "invalid_arguments",
			wantDetails: []tools.Detail{{Pointer: "", Message: "missing property 'text'"}}},
		{name: "unknown tool", body: `{"name":"nope"}`, wantStatus: 404, wantCode: "unknown_tool"},
		{name: "body of 64 KiB + 1 byte", body: big[:64<<10+1], wantStatus: 413, wantCode: "body_too_large"},
		{name: "wrong content type", body: `{"name":"echo"}`, header: map[string]string{"Content-Type": "text/plain"}, wantStatus: 415, wantCode: "unsupported_media_type"},
		{name: "form content type", body: `name=echo`, header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, wantStatus: 415, wantCode: "unsupported_media_type"},
		{name: "method not allowed", method: http.MethodPut, body: `{}`, wantStatus: 405, wantCode: "method_not_allowed"},
		{name: "disallowed origin", body: `{"name":"echo","arguments":{"text":"a"}}`, header: map[string]string{"Origin": "https://evil.example"}, wantStatus: 403, wantCode: "origin_not_allowed"},
		{name: "mutating tool without Idempotency-Key", body: `{"name":"counter.add","arguments":{"n":1}}`, wantStatus: 400, wantCode: "idempotency_key_required"},
		{name: "panic is internal, says nothing", body: `{"name":"boom"}`, wantStatus: 500, wantCode: "internal", wantMessage: "internal error"},
		{name: "unknown route", method: http.MethodGet, body: ``, wantStatus: 404, wantCode: "not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{"Content-Type": "application/json"}
			for k, v := range tc.header {
				h[k] = v
			}
			method, path := tc.method, "/api/chat/tools"
			if method == "" {
				method = http.MethodPost
			}
			if tc.name == "unknown route" {
				path = "/api/nothing"
			}
			r := te.do(t, method, path, strings.NewReader(tc.body), h)
			if r.status != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", r.status, tc.wantStatus, r.body)
			}
			code, msg, details := r.errorBody(t)
			if code != tc.wantCode {
				t.Fatalf("code %q, want %q", code, tc.wantCode)
			}
			if !strings.Contains(msg, tc.wantMessage) {
				t.Fatalf("message %q, want it to contain %q", msg, tc.wantMessage)
			}
			if tc.wantDetails != nil {
				if diff := cmp.Diff(tc.wantDetails, details); diff != "" {
					t.Fatalf("details (-want +got):\n%s", diff)
				}
			}
			if strings.Contains(string(r.body), "secret internals") {
				t.Fatal("a panic message reached the client")
			}
		})
	}
}

func TestRateLimit(t *testing.T) {
	te := newEnv(t, map[string]string{"RATE_LIMIT_PER_MINUTE": "3"})
	for i := range 3 {
		if r := te.call(t, `{"name":"echo","arguments":{"text":"a"}}`, nil); r.status != http.StatusOK {
			t.Fatalf("call %d: status %d: %s", i+1, r.status, r.body)
		}
	}
	r := te.call(t, `{"name":"echo","arguments":{"text":"a"}}`, nil)
	if r.status != http.StatusTooManyRequests {
		t.Fatalf("4th call: status %d: %s", r.status, r.body)
	}
	if code, _, _ := r.errorBody(t); code != "rate_limited" {
		t.Fatalf("code %q", code)
	}
	secs, err := strconv.Atoi(r.header.Get("Retry-After"))
	if err != nil || secs < 1 || secs > 60 {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	// Listing tools is not a tool call and stays available.
	if l := te.do(t, http.MethodGet, "/api/chat/tools", nil, nil); l.status != http.StatusOK {
		t.Fatalf("list while limited: %d", l.status)
	}
}

func TestRateLimitUsesTrustedProxyHeaderOnlyFromTrustedPeers(t *testing.T) {
	// The test client connects from 127.0.0.1: trusted here, so each X-Forwarded-For
	// address is its own client.
	te := newEnv(t, map[string]string{"RATE_LIMIT_PER_MINUTE": "1", "TRUSTED_PROXIES": "127.0.0.1/32"})
	for _, ip := range []string{"203.0.113.1", "203.0.113.2"} {
		if r := te.call(t, `{"name":"echo","arguments":{"text":"a"}}`, map[string]string{"X-Forwarded-For": ip}); r.status != http.StatusOK {
			t.Fatalf("client %s: status %d", ip, r.status)
		}
	}
	if r := te.call(t, `{"name":"echo","arguments":{"text":"a"}}`, map[string]string{"X-Forwarded-For": "203.0.113.1"}); r.status != http.StatusTooManyRequests {
		t.Fatalf("repeat client: status %d", r.status)
	}
	// Without trusted proxies the header is ignored: every request is the socket peer's.
	te = newEnv(t, map[string]string{"RATE_LIMIT_PER_MINUTE": "1"})
	te.call(t, `{"name":"echo","arguments":{"text":"a"}}`, map[string]string{"X-Forwarded-For": "203.0.113.1"})
	if r := te.call(t, `{"name":"echo","arguments":{"text":"a"}}`, map[string]string{"X-Forwarded-For": "203.0.113.2"}); r.status != http.StatusTooManyRequests {
		t.Fatalf("spoofed header was believed: status %d", r.status)
	}
}

func TestCORS(t *testing.T) {
	te := newEnv(t, map[string]string{"CORS_ALLOWED_ORIGINS": "https://partner.example"})
	for _, tc := range []struct {
		origin    string
		wantAllow bool
	}{
		{"https://site.example", true},    // SITE_URL, always allowed
		{"https://partner.example", true}, // configured
		{"https://evil.example", false},   // neither
		{te.Srv.URL, true},                // same origin as the request's Host
		{"http://site.example", false},    // scheme matters
		{"https://site.example.evil", false},
	} {
		t.Run(tc.origin, func(t *testing.T) {
			pre := te.do(t, http.MethodOptions, "/api/chat/tools", nil, map[string]string{
				"Origin": tc.origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type,idempotency-key",
			})
			got := pre.header.Get("Access-Control-Allow-Origin")
			if tc.wantAllow != (got == tc.origin) || pre.header.Get("Access-Control-Allow-Credentials") != "" {
				t.Fatalf("preflight: status %d, allow-origin %q, headers %v", pre.status, got, pre.header)
			}
			r := te.call(t, `{"name":"echo","arguments":{"text":"a"}}`, map[string]string{"Origin": tc.origin})
			if tc.wantAllow && (r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != tc.origin) {
				t.Fatalf("call: status %d, allow-origin %q", r.status, r.header.Get("Access-Control-Allow-Origin"))
			}
			if !tc.wantAllow && r.status != http.StatusForbidden {
				t.Fatalf("call: status %d, want 403", r.status)
			}
		})
	}
	// No Origin header (curl, servers, MCP clients): passes.
	if r := te.call(t, `{"name":"echo","arguments":{"text":"a"}}`, nil); r.status != 200 {
		t.Fatalf("no origin: %d", r.status)
	}
}

func TestHealthAndReadiness(t *testing.T) {
	te := newEnv(t, nil)
	if r := te.do(t, http.MethodGet, "/healthz", nil, nil); r.status != 200 {
		t.Fatalf("healthz %d", r.status)
	}
	if r := te.do(t, http.MethodGet, "/readyz", nil, nil); r.status != 200 || !strings.Contains(string(r.body), "ready") {
		t.Fatalf("readyz %d %s", r.status, r.body)
	}
}

func TestMethodNotAllowedSaysWhatIs(t *testing.T) {
	te := newEnv(t, nil)
	for _, m := range []string{http.MethodPut, http.MethodDelete, "PROPFIND"} {
		r := te.do(t, m, "/api/chat/tools", nil, nil)
		if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "GET, HEAD, POST" {
			t.Fatalf("%s: status %d, Allow %q", m, r.status, r.header.Get("Allow"))
		}
		if code, _, _ := r.errorBody(t); code != "method_not_allowed" {
			t.Fatalf("%s: code %s", m, code)
		}
	}
	if r := te.do(t, http.MethodHead, "/api/chat/tools", nil, nil); r.status != http.StatusOK || r.header.Get("ETag") == "" {
		t.Fatalf("HEAD: status %d", r.status)
	}
}
