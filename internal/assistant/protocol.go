package assistant

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sitetools/sitetools/internal/llm"
)

// toolProtocol is how tool calls travel between the model and the loop: as the provider's
// function calls (native), or as JSON in the reply's text, for models without tool
// calling (see doc.go).
type toolProtocol interface {
	// prepare sets what the request tells the model about the tools.
	prepare(req *llm.ChatRequest, cat *catalog, toolsAllowed bool)
	// textual reports whether tool requests come as text, which is then held back from
	// the visitor until it is known not to be one.
	textual() bool
	// calls returns the calls a reply asks for; a non-empty correction is what the model
	// is told when its request could not be read.
	calls(r *reply) (batch []pendingCall, correction string)
	// answer appends the reply and the calls' results to the conversation; invalid
	// reports requests the model is asked to correct.
	answer(msgs []llm.ChatMessage, r *reply, batch []pendingCall, results []callResult, lastRound bool) (out []llm.ChatMessage, invalid bool)
}

func (a *Assistant) protocol() toolProtocol {
	if a.opts.ToolMode == ToolModeJSON {
		return jsonTools{}
	}
	return nativeTools{}
}

type nativeTools struct{}

func (nativeTools) prepare(req *llm.ChatRequest, cat *catalog, toolsAllowed bool) {
	if len(cat.native) > 0 {
		req.Tools, req.NoToolCalls = cat.native, !toolsAllowed
	}
}

func (nativeTools) textual() bool { return false }

func (nativeTools) calls(r *reply) ([]pendingCall, string) {
	var batch []pendingCall
	for _, tc := range r.ToolCalls {
		batch = append(batch, pendingCall{name: tc.Name, args: json.RawMessage(tc.Arguments), providerID: tc.ID})
	}
	return batch, ""
}

// answer sends the calls back as the assistant's, and each result as a tool message.
func (nativeTools) answer(msgs []llm.ChatMessage, r *reply, batch []pendingCall, results []callResult, lastRound bool) ([]llm.ChatMessage, bool) {
	calls := make([]llm.ToolCall, len(batch))
	for i, c := range batch {
		calls[i] = llm.ToolCall{ID: c.providerID, Name: c.name, Arguments: string(c.args)}
	}
	msgs = append(msgs, llm.ChatMessage{Role: "assistant", Content: r.Text, ToolCalls: calls})
	for i, res := range results {
		content := toolResultText(safeName(batch[i].name), res.payload)
		if lastRound && i == len(results)-1 {
			content += lastRoundNote
		}
		msgs = append(msgs, llm.ChatMessage{Role: "tool", ToolCallID: batch[i].providerID, Content: content})
	}
	return msgs, false
}

type jsonTools struct{}

func (jsonTools) prepare(*llm.ChatRequest, *catalog, bool) {} // the catalog is in the system message

func (jsonTools) textual() bool { return true }

func (jsonTools) calls(r *reply) ([]pendingCall, string) {
	if !r.request {
		return nil, ""
	}
	reqs, err := parseToolRequests(r.Text)
	if err != nil {
		return nil, "TOOL_REQUEST_ERROR: " + err.Error() +
			`. Reply again with nothing but {"tool": "<name>", "args": {…}} (or an array of them), or with plain text for the visitor that does not begin with { or [.`
	}
	batch := make([]pendingCall, len(reqs))
	for i, req := range reqs {
		batch[i] = pendingCall{name: req.Tool, args: req.Args}
	}
	return batch, ""
}

// answer sends one user message with the results, and the problems of invalid requests.
func (jsonTools) answer(msgs []llm.ChatMessage, r *reply, batch []pendingCall, results []callResult, lastRound bool) ([]llm.ChatMessage, bool) {
	var sections, problems []string
	for i, res := range results {
		if res.invalid != "" {
			problems = append(problems, fmt.Sprintf("request %d (%s): %s", i+1, safeName(batch[i].name), res.invalid))
			continue
		}
		sections = append(sections, toolResultText(safeName(batch[i].name), res.payload))
	}
	if len(problems) > 0 {
		sections = append(sections, "TOOL_REQUEST_ERROR: "+strings.Join(problems, "; ")+
			". Correct these requests and reply again with nothing but the JSON, or answer in plain text.")
	}
	content := strings.Join(sections, "\n\n")
	if lastRound {
		content += lastRoundNote
	}
	msgs = append(msgs, llm.ChatMessage{Role: "assistant", Content: r.Text}, llm.ChatMessage{Role: "user", Content: content})
	return msgs, len(problems) > 0
}
