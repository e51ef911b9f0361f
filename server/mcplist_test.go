package server_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func mcpRequest(body, rev, accept string) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	if rev != "" {
		req.Header.Set("Mcp-Protocol-Version", rev)
	}
	return req
}

type answer struct {
	Status int
	Header http.Header
	Body   string
}

func answerOf(rec *httptest.ResponseRecorder) answer {
	h := rec.Result().Header
	h.Del("Date")
	return answer{rec.Code, h, rec.Body.String()}
}

// TestMCPToolsListPrecomputed: for every protocol revision the SDK supports (and none),
// every kind of id and every form of empty params, the precomputed tools/list answers
// with the status, headers and bytes the MCP SDK gives the same request.
func TestMCPToolsListPrecomputed(t *testing.T) {
	te := newEnv(t, nil)
	revs := append([]string{""}, mcp.SupportedProtocolVersions()...)
	ids := []string{`1`, `0`, `-7`, `123456789012345`, `"list"`, `"a.b:c-d_e"`}
	params := []string{``, `,"params":null`, `,"params":{}`, `,"params": { }`}
	served, refused := 0, map[string]bool{}
	for _, rev := range revs {
		for _, id := range ids {
			for _, p := range params {
				body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list"` + p + `}`
				sdk := httptest.NewRecorder()
				te.App.MCPSDK().ServeHTTP(sdk, mcpRequest(body, rev, "application/json, text/event-stream"))
				fast := httptest.NewRecorder()
				answered := te.App.MCPFastList(fast, mcpRequest(body, rev, "application/json, text/event-stream"))
				if sdk.Code != http.StatusOK || !strings.Contains(sdk.Body.String(), `"tools":[`) {
					// The SDK refuses a plain request under this revision (2026-07-28 wants
					// _meta and Mcp-Method): so must the fast path, leaving it to the SDK.
					refused[rev] = true
					if answered {
						t.Errorf("revision %q: %s answered from the precomputed bytes, the SDK refuses it:\n%s", rev, body, sdk.Body)
					}
					continue
				}
				if !answered {
					t.Errorf("revision %q: %s was not answered from the precomputed bytes", rev, body)
					continue
				}
				served++
				if diff := cmp.Diff(answerOf(sdk), answerOf(fast)); diff != "" {
					t.Errorf("revision %q, %s (-sdk +precomputed):\n%s", rev, body, diff)
				}
			}
		}
	}
	if served == 0 || len(refused) > 1 {
		t.Errorf("%d requests answered from the precomputed bytes; the SDK refused plain requests under %v", served, refused)
	}
	t.Logf("%d requests answered from the precomputed bytes, byte for byte as the SDK; revisions the SDK refuses a plain tools/list under: %v", served, refused)

	// Over the real route, too.
	req, _ := http.NewRequest(http.MethodPost, te.Srv.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
	req.Header = mcpRequest("", "2025-06-18", "application/json, text/event-stream").Header
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(res.Body)
	res.Body.Close()
	sdk := httptest.NewRecorder()
	te.App.MCPSDK().ServeHTTP(sdk, mcpRequest(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`, "2025-06-18", "application/json, text/event-stream"))
	if !bytes.Equal(got, sdk.Body.Bytes()) || !strings.Contains(string(got), `"name":"echo"`) {
		t.Errorf("POST /mcp tools/list:\n%s\nthe SDK:\n%s", got, sdk.Body.Bytes())
	}
}

// TestMCPToolsListOthersGoToTheSDK: a request that is not a plain tools/list is left to
// the SDK with its body whole, and answered as the SDK answers it.
func TestMCPToolsListOthersGoToTheSDK(t *testing.T) {
	te := newEnv(t, nil)
	const accept = "application/json, text/event-stream"
	for name, tc := range map[string]struct{ body, rev, accept string }{
		"cursor":           {`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"x"}}`, "", accept},
		"_meta":            {`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"progressToken":1}}}`, "", accept},
		"batch":            {`[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`, "2025-03-26", accept},
		"extra member":     {`{"jsonrpc":"2.0","id":1,"method":"tools/list","x":1}`, "", accept},
		"notification":     {`{"jsonrpc":"2.0","method":"tools/list"}`, "", accept},
		"fractional id":    {`{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`, "", accept},
		"id with escapes":  {`{"jsonrpc":"2.0","id":"<\u00e9>","method":"tools/list"}`, "", accept},
		"old jsonrpc":      {`{"jsonrpc":"1.0","id":1,"method":"tools/list"}`, "", accept},
		"another method":   {`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_search","arguments":{"query":"a"}}}`, "", accept},
		"unknown revision": {`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "1999-01-01", accept},
		"json only":        {`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "", "application/json"},
		"large body":       {`{"jsonrpc":"2.0","id":1,"method":"tools/list"` + strings.Repeat(" ", 2000) + `}`, "", accept},
		"not json":         {`{"jsonrpc":"2.0",`, "", accept},
	} {
		t.Run(name, func(t *testing.T) {
			req := mcpRequest(tc.body, tc.rev, tc.accept)
			fast := httptest.NewRecorder()
			if te.App.MCPFastList(fast, req) {
				t.Fatalf("answered from the precomputed bytes: %s", fast.Body)
			}
			if fast.Code != http.StatusOK || fast.Body.Len() > 0 || len(fast.Header()) > 0 {
				t.Fatalf("wrote %d %v %q before handing over", fast.Code, fast.Header(), fast.Body)
			}
			after := httptest.NewRecorder()
			te.App.MCPSDK().ServeHTTP(after, req) // the body the fast path read from, restored
			fresh := httptest.NewRecorder()
			te.App.MCPSDK().ServeHTTP(fresh, mcpRequest(tc.body, tc.rev, tc.accept))
			if diff := cmp.Diff(answerOf(fresh), answerOf(after)); diff != "" {
				t.Errorf("the SDK's answer changed (-fresh +after the fast path looked):\n%s", diff)
			}
		})
	}
}
