package assistant

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sitetools/sitetools/tools"
)

// pendingCall is a tool call the model asked for.
type pendingCall struct {
	name       string
	args       json.RawMessage
	providerID string // native mode: the provider's call id
}

// callResult is what the model gets back for one call.
type callResult struct {
	payload json.RawMessage
	ok      bool
	// invalid says why the request itself was wrong (unknown tool, arguments that fail
	// the schema): JSON mode answers it with a corrective turn.
	invalid string
}

// runBatch runs the calls of one round in parallel, at most Concurrency at once, and
// returns their results in the order of the calls.
func (t *turnState) runBatch(ctx context.Context, cat *catalog, batch []pendingCall) []callResult {
	results := make([]callResult, len(batch))
	sem := make(chan struct{}, t.a.opts.Concurrency)
	var wg sync.WaitGroup
	for i, c := range batch {
		if _, ok := cat.byName[c.name]; !ok {
			// Unknown here also means a tool that changes state: the chat cannot call those.
			msg := fmt.Sprintf("no tool named %q is available in this chat; the tools are: %s", safeName(c.name), strings.Join(cat.names(), ", "))
			results[i] = errorResult(&tools.Error{Code: tools.CodeUnknownTool, Message: msg})
			results[i].invalid = msg
			continue
		}
		if i >= maxCallsPerRound {
			results[i] = errorResult(tools.Errorf(tools.CodeMalformedRequest, "at most %d tool calls run at once; ask for this one again", maxCallsPerRound))
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				results[i] = errorResult(tools.Errorf(tools.CodeUnavailable, "the call was cancelled"))
				return
			}
			defer func() { <-sem }()
			id := t.nextID()
			if t.emit(EventToolCall, ToolCall{ID: id, Name: c.name}) != nil {
				results[i] = errorResult(tools.Errorf(tools.CodeUnavailable, "the call was cancelled"))
				return
			}
			results[i] = t.call(ctx, c.name, c.args)
			_ = t.emit(EventToolResult, ToolResult{ID: id, Name: c.name, OK: results[i].ok})
		}()
	}
	wg.Wait()
	return results
}

// call runs one tool through the registry, on the chat channel, under a deadline.
func (t *turnState) call(ctx context.Context, name string, args json.RawMessage) callResult {
	timeout := t.a.opts.ToolTimeout
	if tool, ok := t.a.opts.Registry.Lookup(name); ok && tool.Timeout > 0 {
		timeout = tool.Timeout
	}
	// The registry applies the tool's own deadline around the handler; this one also
	// bounds the interceptors (rate limit, idempotency store, metrics).
	ctx, cancel := context.WithTimeout(tools.WithRequest(ctx, t.req), timeout+5*time.Second)
	defer cancel()
	res, err := t.a.opts.Registry.Call(ctx, name, args)
	if err != nil {
		e := tools.AsError(err)
		if e.Code == tools.CodeInternal {
			t.a.opts.Logger.Error("tool call failed", "tool", name, "channel", "chat", "err", e.Error())
		}
		e = e.Public()
		r := errorResult(e)
		switch e.Code {
		case tools.CodeInvalidArguments, tools.CodeMalformedRequest, tools.CodeUnknownTool:
			r.invalid = e.Message
			for _, d := range e.Details {
				r.invalid += "; " + d.Pointer + ": " + d.Message
			}
		}
		return r
	}
	if res.IsError {
		var text []string
		for _, c := range res.Content {
			text = append(text, c.Text)
		}
		return callResult{payload: mustMarshal(map[string]any{"ok": false,
			"message": json.RawMessage(Sanitize(strings.Join(text, "\n"), t.a.opts.Sanitize))})}
	}
	t.collectSources(res)
	var shown any = res.StructuredContent
	if shown == nil {
		var text []string
		for _, c := range res.Content {
			text = append(text, c.Text)
		}
		joined := strings.Join(text, "\n")
		if json.Valid([]byte(joined)) {
			shown = json.RawMessage(joined)
		} else {
			shown = joined
		}
	}
	return callResult{ok: true, payload: mustMarshal(map[string]any{"ok": true,
		"result": json.RawMessage(Sanitize(shown, t.a.opts.Sanitize))})}
}

func errorResult(e *tools.Error) callResult {
	body := map[string]any{"code": e.Code, "message": e.Message}
	if len(e.Details) > 0 {
		body["details"] = e.Details
	}
	return callResult{payload: mustMarshal(map[string]any{"ok": false, "error": json.RawMessage(Sanitize(body, SanitizeOptions{MaxBytes: 4 << 10}))})}
}

func (c *catalog) names() []string {
	out := make([]string, 0, len(c.byName))
	for _, n := range c.native {
		out = append(out, n.Name)
	}
	return out
}

// safeName is a tool name as the model gave it, fit to stand outside a data block.
func safeName(name string) string {
	var b strings.Builder
	for _, r := range name {
		if b.Len() >= 64 {
			b.WriteString("…")
			break
		}
		if r == '_' || r == '-' || r == '.' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteRune('?')
		}
	}
	return b.String()
}
