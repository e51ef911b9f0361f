package assistant

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/tools"
)

// The catalog's estimate, which counts the system message and the tools once, is
// llm.EstimateChatTokens exactly, for every request a turn sends and for any other.
func TestCatalogEstimate(t *testing.T) {
	reg := tools.NewRegistry(nil)
	for _, name := range []string{"search_site", "get_page"} {
		reg.MustAdd(tools.Tool{
			Name: name, Description: "Finds pages of the site about a question, best first.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"What to look for."}},"required":["query"]}`),
			Annotations: tools.Annotations{ReadOnly: true},
			Handler: func(context.Context, json.RawMessage) (*tools.Result, error) {
				return tools.TextResult("ok"), nil
			},
		})
	}
	for _, mode := range []string{ToolModeNative, ToolModeJSON} {
		cat := buildCatalog(reg.Catalog(), DefaultPersona, mode)
		first := llm.ChatRequest{MaxTokens: 1024, Messages: []llm.ChatMessage{
			{Role: "system", Content: cat.system},
			{Role: "user", Content: visitorMessage([]Message{{Role: RoleUser, Content: "Do you audit websites?"}})},
		}}
		if mode == ToolModeNative {
			nativeTools{}.prepare(&first, cat, true)
		}
		second := first
		second.NoToolCalls = true
		second.Messages = append(slices.Clone(first.Messages),
			llm.ChatMessage{Role: "assistant", ToolCalls: []llm.ToolCall{{ID: "c1", Name: "search_site", Arguments: `{"query":"audit"}`}}},
			llm.ChatMessage{Role: "tool", ToolCallID: "c1", Content: toolResultText("search_site", json.RawMessage(`{"ok":true,"result":{"hits":[]}}`))})
		copied := first
		copied.Tools = slices.Clone(first.Tools)
		otherSystem := first
		otherSystem.Messages = append([]llm.ChatMessage{{Role: "system", Content: "Be brief."}}, first.Messages[1:]...)
		noTools := first
		noTools.Tools = nil
		for name, req := range map[string]llm.ChatRequest{"first": first, "after a tool round": second,
			"copied tools": copied, "another system message": otherSystem, "no tools": noTools, "empty": {}} {
			if got, want := cat.estimate(req), llm.EstimateChatTokens(req); got != want {
				t.Errorf("%s, %s: estimate %d, llm.EstimateChatTokens %d", mode, name, got, want)
			}
		}
	}
}
