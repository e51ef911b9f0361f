package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sitetools/sitetools/tools"
)

// headerRecorder remembers every response header an MCP client saw.
type headerRecorder struct {
	mu      sync.Mutex
	headers []http.Header
	origin  string
}

func (h *headerRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if h.origin != "" {
		req.Header.Set("Origin", h.origin)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		h.mu.Lock()
		h.headers = append(h.headers, resp.Header.Clone())
		h.mu.Unlock()
	}
	return resp, err
}

func connectMCP(t *testing.T, url string, rec *headerRecorder) *mcp.ClientSession {
	t.Helper()
	if rec == nil {
		rec = &headerRecorder{}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "sitetools-test", Version: "1"}, nil)
	session, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: url + "/mcp", HTTPClient: &http.Client{Transport: rec}, DisableStandaloneSSE: true,
	}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { session.Close() })
	return session
}

// channelTool is a tool as a channel lists it, in one comparable shape.
type channelTool struct {
	Name, Title, Description  string
	InputSchema, OutputSchema string
	Annotations               tools.Annotations
}

func canonical(t *testing.T, v any) string {
	t.Helper()
	if v == nil {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	_ = json.Unmarshal(b, &x)
	b, _ = json.Marshal(x)
	return string(b)
}

func jsonEndpointTools(t *testing.T, te *testEnv) []channelTool {
	t.Helper()
	r := te.do(t, http.MethodGet, "/api/chat/tools", nil, nil)
	var list struct{ Tools []tools.Definition }
	if err := json.Unmarshal(r.body, &list); err != nil {
		t.Fatal(err)
	}
	var out []channelTool
	for _, d := range list.Tools {
		ct := channelTool{Name: d.Name, Title: d.Title, Description: d.Description, InputSchema: canonical(t, d.InputSchema), Annotations: d.Annotations}
		if d.OutputSchema != nil {
			ct.OutputSchema = canonical(t, d.OutputSchema)
		}
		out = append(out, ct)
	}
	return out
}

func mcpTools(t *testing.T, session *mcp.ClientSession) []channelTool {
	t.Helper()
	res, err := session.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []channelTool
	for _, tl := range res.Tools {
		ct := channelTool{Name: tl.Name, Title: tl.Title, Description: tl.Description, InputSchema: canonical(t, tl.InputSchema)}
		if tl.OutputSchema != nil {
			ct.OutputSchema = canonical(t, tl.OutputSchema)
		}
		if a := tl.Annotations; a != nil {
			ct.Annotations = tools.Annotations{ReadOnly: a.ReadOnlyHint, Idempotent: a.IdempotentHint,
				Destructive: a.DestructiveHint != nil && *a.DestructiveHint, OpenWorld: a.OpenWorldHint != nil && *a.OpenWorldHint}
		}
		out = append(out, ct)
	}
	return out
}

// TestChannelParity: every channel lists the same tools with the same names,
// descriptions, schemas and annotations, and a tool added to the registry appears on
// every channel.
func TestChannelParity(t *testing.T) {
	// The chat offers the read-only tools (see chatView), natively or in JSON mode.
	native, jsonMode := newChatEnv(t, nil, true), newChatEnv(t, map[string]string{"LLM_TOOL_MODE": "json"}, true)
	te := native.testEnv
	session := connectMCP(t, te.Srv.URL, nil)
	want := jsonEndpointTools(t, te)
	if len(want) < 4 {
		t.Fatalf("%d tools", len(want))
	}
	if diff := cmp.Diff(want, mcpTools(t, session)); diff != "" {
		t.Fatalf("MCP differs from the JSON endpoint (-json +mcp):\n%s", diff)
	}
	for _, ce := range []*chatEnv{native, jsonMode} {
		chat := chatTools(t, ce)
		if diff := cmp.Diff(chatView(jsonEndpointTools(t, ce.testEnv)), chat); diff != "" {
			t.Fatalf("the chat's catalog differs from the JSON endpoint's read-only tools (-json +chat):\n%s", diff)
		}
		if len(chat) != len(want)-1 {
			t.Fatalf("the chat offers %d of %d tools; only counter.add changes state", len(chat), len(want))
		}
	}

	added := tools.Tool{
		Name: "added.later", Title: "Added later", Description: "A tool registered after start.",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"y":{"type":"integer"}}}`),
		Annotations:  tools.Annotations{ReadOnly: true, OpenWorld: true},
		Handler: func(context.Context, json.RawMessage) (*tools.Result, error) {
			return tools.StructuredResult(map[string]int{"y": 2})
		},
	}
	for _, ce := range []*chatEnv{native, jsonMode} {
		if err := ce.App.Registry().Add(added); err != nil {
			t.Fatal(err)
		}
	}
	after := jsonEndpointTools(t, te)
	if len(after) != len(want)+1 {
		t.Fatalf("JSON endpoint lists %d tools after adding one to %d", len(after), len(want))
	}
	if diff := cmp.Diff(after, mcpTools(t, connectMCP(t, te.Srv.URL, nil))); diff != "" {
		t.Fatalf("after adding a tool (-json +mcp):\n%s", diff)
	}
	for _, ce := range []*chatEnv{native, jsonMode} {
		if diff := cmp.Diff(chatView(jsonEndpointTools(t, ce.testEnv)), chatTools(t, ce)); diff != "" {
			t.Fatalf("after adding a tool (-json +chat):\n%s", diff)
		}
	}
	res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: "added.later", Arguments: map[string]any{"x": 1}})
	if err != nil || res.IsError {
		t.Fatalf("calling the added tool: %v %+v", err, res)
	}
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestMCPCalls(t *testing.T) {
	te := newEnv(t, map[string]string{"RATE_LIMIT_PER_MINUTE": "6", "ADMIN_TOKEN": "admin-token-0123456789"})
	rec := &headerRecorder{}
	session := connectMCP(t, te.Srv.URL, rec)
	ctx := context.Background()

	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "ab", "count": 2}})
	if err != nil || res.IsError || textOf(res) != `{"text":"abab"}` || canonical(t, res.StructuredContent) != `{"text":"abab"}` {
		t.Fatalf("echo: %v %+v", err, res)
	}

	// An unknown tool is a protocol error.
	_, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{}})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != -32602 {
		t.Fatalf("unknown tool: %v", err)
	}

	// Invalid arguments: an isError result with the JSON endpoint's message.
	res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": 7}})
	jsonMsg := func() string {
		r := te.call(t, `{"name":"echo","arguments":{"text":7}}`, nil)
		_, msg, _ := r.errorBody(t)
		return msg
	}()
	if err != nil || !res.IsError || !strings.Contains(textOf(res), jsonMsg) || !strings.Contains(textOf(res), "/text") {
		t.Fatalf("invalid arguments: %v %q, want it to contain %q", err, textOf(res), jsonMsg)
	}

	// A tool's own failure.
	res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "range.check", Arguments: map[string]any{}})
	if err != nil || !res.IsError || textOf(res) != "the range ends before it starts" {
		t.Fatalf("tool error: %v %+v", err, res)
	}

	// The rate limit is shared with the JSON endpoint (6 per minute; 4 calls so far).
	te.call(t, `{"name":"echo","arguments":{"text":"a"}}`, nil)
	te.call(t, `{"name":"echo","arguments":{"text":"a"}}`, nil)
	res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "a"}})
	if err != nil || !res.IsError || !strings.Contains(textOf(res), "rate_limited") || !strings.Contains(textOf(res), "retry after") {
		t.Fatalf("rate limit: %v %+v", err, res)
	}

	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.headers) < 5 {
		t.Fatalf("%d responses recorded", len(rec.headers))
	}
	for _, h := range rec.headers {
		if h.Get("Mcp-Session-Id") != "" || h.Get("Set-Cookie") != "" {
			t.Fatalf("stateful response header: %v", h)
		}
	}
	if m := te.scrapeOrEmpty(t); !strings.Contains(m, `sitetools_tool_calls_total{channel="mcp",outcome="ok",tool="echo"} 1`) {
		t.Fatalf("MCP calls are not counted on channel mcp:\n%s", m)
	}
}

func (te *testEnv) scrapeOrEmpty(t *testing.T) string {
	t.Helper()
	return te.scrape(t, "admin-token-0123456789")
}

func rawMCP(t *testing.T, te *testEnv, body string, header map[string]string) response {
	t.Helper()
	h := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2025-06-18"}
	for k, v := range header {
		h[k] = v
	}
	return te.do(t, http.MethodPost, "/mcp", strings.NewReader(body), h)
}

func TestMCPOriginHostAndDeterminism(t *testing.T) {
	te := newEnv(t, map[string]string{"CORS_ALLOWED_ORIGINS": "https://partner.example", "MCP_ALLOWED_HOSTS": "proxy.example"})
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	first := rawMCP(t, te, list, nil)
	if first.status != 200 || !strings.Contains(string(first.body), `"name":"echo"`) {
		t.Fatalf("tools/list: %d %s", first.status, first.body)
	}
	for range 3 {
		if again := rawMCP(t, te, list, nil); string(again.body) != string(first.body) {
			t.Fatalf("tools/list differs between callers:\n%s\n%s", first.body, again.body)
		}
	}
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"disallowed origin", map[string]string{"Origin": "https://evil.example"}, 403},
		{"allowed origin", map[string]string{"Origin": "https://partner.example"}, 200},
		{"site origin", map[string]string{"Origin": "https://site.example"}, 200},
		{"rebinding host on loopback", map[string]string{"Host": "evil.example"}, 403},
		{"proxy host allowed by MCP_ALLOWED_HOSTS", map[string]string{"Host": "proxy.example"}, 200},
		{"the site's own host", map[string]string{"Host": "site.example"}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, te.Srv.URL+"/mcp", strings.NewReader(list))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range tc.header {
				if k == "Host" {
					req.Host = v
				} else {
					req.Header.Set(k, v)
				}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.want || resp.Header.Get("Mcp-Session-Id") != "" {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.want, b)
			}
		})
	}
	if r := te.do(t, http.MethodGet, "/mcp", nil, map[string]string{"Accept": "text/event-stream"}); r.status != http.StatusMethodNotAllowed {
		t.Fatalf("GET /mcp: %d", r.status)
	}
}
