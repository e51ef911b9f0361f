package appointments_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sitetools/sitetools/tools/appointments"
)

// TestFreeSlotsOverMCP calls get_free_slots with the official MCP client over real HTTP.
func TestFreeSlotsOverMCP(t *testing.T) {
	e := newEnv(t)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	session, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: e.Srv.URL + "/mcp", DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_free_slots", Arguments: map[string]any{"from": "2026-12-01", "to": "2026-12-02"}})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out appointments.Output
	if err := json.Unmarshal(b, &out); err != nil || len(out.Slots) == 0 || out.Timezone != "Europe/Berlin" {
		t.Fatalf("output %s", b)
	}
	res, err = session.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_free_slots", Arguments: map[string]any{"from": "2026-12-01", "to": "2026-12-02", "durationMinutes": 7}})
	if err != nil || !res.IsError {
		t.Fatalf("durationMinutes 7: %v %+v", err, res)
	}
}
