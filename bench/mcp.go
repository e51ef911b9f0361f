package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/sitetools/sitetools/tools/sitesearch"
)

// The MCP scenarios send what a remote MCP client sends over Streamable HTTP: one
// JSON-RPC request per POST, with the headers of the revision it speaks. /mcp is
// stateless, so no initialize precedes a call and no session id follows it.
const (
	mcpProtocolVersion = "2025-11-25"
	mcpListBody        = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	mcpListName        = "POST /mcp tools/list vs GET /api/chat/tools"
)

func mcpRequest(body []byte) request {
	return request{method: http.MethodPost, path: "/mcp", body: body, header: http.Header{
		"Content-Type":         {"application/json"},
		"Accept":               {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {mcpProtocolVersion},
	}}
}

func mcpSearchName(conns int) string {
	return fmt.Sprintf("POST /mcp tools/call search_site vs POST /api/chat/tools, %d conn (cached embedding)", conns)
}

// mcpListScenario compares the two ways a client lists the tools of one service: the
// MCP channel (a plain tools/list is answered from bytes precomputed from the go-sdk's
// stateless Streamable HTTP handler, per protocol revision) and the JSON endpoint's
// precomputed catalog. Goal: ≥ 0.8 of the JSON endpoint's throughput.
func mcpListScenario(svc *service) scenario {
	subject := target{label: "mcp", addr: svc.addr, req: mcpRequest([]byte(mcpListBody)), want: http.StatusOK}
	baseline := target{label: "json", addr: svc.addr, want: http.StatusOK,
		req: request{method: http.MethodGet, path: "/api/chat/tools", header: http.Header{"Accept": {"application/json"}}}}
	return scenario{
		name: mcpListName,
		goal: 0.8,
		about: "the same in-process service listing its tools over /mcp (one JSON-RPC tools/list per POST, Mcp-Protocol-Version " + mcpProtocolVersion +
			"; answered from the go-sdk StreamableHTTPHandler's own answer, precomputed per revision) vs over GET /api/chat/tools (the precomputed catalog)",
		subject:  subject,
		baseline: baseline,
		check: func() ([]string, error) {
			mcpTools, mbody, err := probeList(subject)
			if err != nil {
				return nil, err
			}
			_, jbody, err := probe(baseline)
			if err != nil {
				return nil, err
			}
			var cat struct {
				Tools json.RawMessage `json:"tools"`
			}
			if err := json.Unmarshal(jbody, &cat); err != nil {
				return nil, fmt.Errorf("GET /api/chat/tools: %w", err)
			}
			a, err := definitions(mcpTools)
			if err != nil {
				return nil, fmt.Errorf("/mcp: %w", err)
			}
			b, err := definitions(cat.Tools)
			if err != nil {
				return nil, fmt.Errorf("/api/chat/tools: %w", err)
			}
			if !reflect.DeepEqual(a, b) {
				return nil, fmt.Errorf("parity: /mcp lists %q, /api/chat/tools %q, or their schemas or annotations differ", names(a), names(b))
			}
			return []string{fmt.Sprintf("both list the same %d tools with the same names, titles, descriptions, input and output schemas "+
				"and annotations (%s); answers of %d bytes (JSON-RPC) and %d bytes (catalog)",
				len(a), strings.Join(names(a), ", "), len(mbody), len(jbody))}, nil
		},
	}
}

// mcpSearchScenario compares one cached search_site call over /mcp with the same call
// over the JSON endpoint, on the same service. No goal.
func mcpSearchScenario(svc *service, conns int) (scenario, error) {
	call, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": "search_site", "arguments": map[string]any{"query": searchQuery, "limit": searchLimit}}})
	if err != nil {
		return scenario{}, err
	}
	args, err := json.Marshal(map[string]any{"name": "search_site", "arguments": map[string]any{"query": searchQuery, "limit": searchLimit}})
	if err != nil {
		return scenario{}, err
	}
	subject := target{label: "mcp", addr: svc.addr, req: mcpRequest(call), want: http.StatusOK}
	baseline := target{label: "json", addr: svc.addr, want: http.StatusOK,
		req: request{method: http.MethodPost, path: "/api/chat/tools", body: args,
			header: http.Header{"Accept": {"application/json"}, "Content-Type": {"application/json"}}}}
	return scenario{
		name: mcpSearchName(conns),
		about: "search_site on the same in-process service over /mcp (JSON-RPC tools/call through the go-sdk handler, then Registry.Call) " +
			"vs over POST /api/chat/tools (Registry.Call), the query's vector in the cost guard's cache on both",
		latency:  true,
		conns:    conns,
		subject:  subject,
		baseline: baseline,
		check: func() ([]string, error) {
			want, err := searchViaAPI(baseline)
			if err != nil {
				return nil, err
			}
			_, body, err := probe(subject)
			if err != nil {
				return nil, err
			}
			got, err := searchResults(body, true)
			if err != nil {
				return nil, err
			}
			key := func(h sitesearch.Hit) string { return fmt.Sprintf("%s#%s %v", h.URL, h.Anchor, h.Score) }
			if !slices.Equal(mapSlice(got, key), mapSlice(want, key)) {
				return nil, fmt.Errorf("parity: /mcp returns %q, /api/chat/tools %q", mapSlice(got, key), mapSlice(want, key))
			}
			return []string{fmt.Sprintf("both return the same %d results in the same order with the same scores", len(want))}, nil
		},
	}, nil
}

// searchResults reads search_site's results from a JSON endpoint answer or, with mcp,
// a JSON-RPC tools/call answer, refusing a failed or degraded search.
func searchResults(body []byte, mcp bool) ([]sitesearch.Hit, error) {
	var res struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			Results  []sitesearch.Hit `json:"results"`
			Degraded string           `json:"degraded"`
		} `json:"structuredContent"`
	}
	if mcp {
		var rpc struct {
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(body, &rpc); err != nil || len(rpc.Error) > 0 || len(rpc.Result) == 0 {
			return nil, fmt.Errorf("tools/call search_site: %.300s", body)
		}
		body = rpc.Result
	}
	if err := json.Unmarshal(body, &res); err != nil {
		return nil, fmt.Errorf("search_site: %w: %.200s", err, body)
	}
	if res.IsError || res.StructuredContent.Degraded != "" || len(res.StructuredContent.Results) == 0 {
		return nil, fmt.Errorf("search_site: isError %v, degraded %q, %d results: the vector half did not run or found nothing",
			res.IsError, res.StructuredContent.Degraded, len(res.StructuredContent.Results))
	}
	return res.StructuredContent.Results, nil
}

// probeList sends t's tools/list once: the result's tools array and the whole answer.
func probeList(t target) (json.RawMessage, []byte, error) {
	_, body, err := probe(t)
	if err != nil {
		return nil, nil, err
	}
	list, err := mcpListResult(body)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", t.label, err)
	}
	return list, body, nil
}

// mcpListResult returns the tools array of a JSON-RPC tools/list answer.
func mcpListResult(body []byte) (json.RawMessage, error) {
	var out struct {
		Result struct {
			Tools json.RawMessage `json:"tools"`
		} `json:"result"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("tools/list: %w: %.200s", err, body)
	}
	if len(out.Error) > 0 || len(out.Result.Tools) == 0 {
		return nil, fmt.Errorf("tools/list: no tools: %.300s", body)
	}
	return out.Result.Tools, nil
}

// definition is what the parity checks compare of a tool: everything a client sees,
// with absent annotation hints read as false (the go-sdk omits false ones).
type definition struct {
	Name         string `json:"name"`
	Title        string `json:"title"`
	Description  string `json:"description"`
	InputSchema  any    `json:"inputSchema"`
	OutputSchema any    `json:"outputSchema"`
	Annotations  struct {
		ReadOnly    bool `json:"readOnlyHint"`
		Destructive bool `json:"destructiveHint"`
		Idempotent  bool `json:"idempotentHint"`
		OpenWorld   bool `json:"openWorldHint"`
	} `json:"annotations"`
}

func definitions(list json.RawMessage) ([]definition, error) {
	var defs []definition
	if err := json.Unmarshal(list, &defs); err != nil {
		return nil, err
	}
	if len(defs) == 0 {
		return nil, errors.New("no tools")
	}
	return defs, nil
}

func names(defs []definition) []string {
	return mapSlice(defs, func(d definition) string { return d.Name })
}
