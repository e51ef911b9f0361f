package sitesearch_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSearchOverMCP calls search_site with the official MCP client over real HTTP.
func TestSearchOverMCP(t *testing.T) {
	e := newSearchEnv(t, envOptions{local: true})
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	session, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: e.Srv.URL + "/mcp", DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_site", Arguments: map[string]any{"query": "accessibility audit", "limit": 3}})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out struct{ Results []struct{ URL string } }
	if err := json.Unmarshal(b, &out); err != nil || len(out.Results) == 0 || !strings.Contains(out.Results[0].URL, "accessibility") {
		t.Fatalf("results %s", b)
	}
	// Over MCP as over the JSON endpoint: a rejected query is a result for the model.
	res, err = session.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_site", Arguments: map[string]any{"query": strings.Repeat("🦜", 70)}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "query_too_long") {
		t.Fatalf("too long: %v %+v", err, res)
	}
}
