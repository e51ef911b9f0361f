package assistant

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/tools"
)

// searchTool is the tool a retrieval-only answer comes from.
const searchTool = "search_site"

// retrievalLimit is how many pages a retrieval-only answer lists.
const retrievalLimit = 5

var retrievalIntro = map[string]string{
	ReasonNotConfigured:   "This is a search result, not a written answer: the pages of this site that best match your question.",
	ReasonBudgetExhausted: "The assistant has reached its limit for today, so this is a search result, not a written answer: the pages of this site that best match your question.",
	ReasonUnavailable:     "The assistant is not available right now, so this is a search result, not a written answer: the pages of this site that best match your question.",
}

// retrieve answers the turn with the best matching pages from search_site, called
// through the registry like any chat tool call.
func (t *turnState) retrieve(ctx context.Context, turn Turn, reason string) error {
	if _, ok := t.a.opts.Registry.Lookup(searchTool); !ok {
		if err := t.delta("The assistant is not available right now, and this site has no search to offer instead. Please use the site's contact page."); err != nil {
			return err
		}
		return t.finish(ModeRetrieval, reason)
	}
	query := t.a.searchQuery(turn.Messages[len(turn.Messages)-1].Content)
	if query == "" {
		if err := t.delta("This is a search result, not a written answer, and your message has nothing to search for. Try asking in words."); err != nil {
			return err
		}
		return t.finish(ModeRetrieval, reason)
	}
	args, err := json.Marshal(map[string]any{"query": query, "limit": retrievalLimit})
	if err != nil {
		return fmt.Errorf("assistant: %w", err)
	}
	id := t.nextID()
	if err := t.emit(EventToolCall, ToolCall{ID: id, Name: searchTool}); err != nil {
		return err
	}
	ctx2, cancel := context.WithTimeout(tools.WithRequest(ctx, t.req), t.a.opts.ToolTimeout+5*time.Second)
	res, callErr := t.a.opts.Registry.Call(ctx2, searchTool, args)
	cancel()
	if err := t.emit(EventToolResult, ToolResult{ID: id, Name: searchTool, OK: callErr == nil && !res.IsError}); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if callErr != nil {
		e := tools.AsError(callErr)
		switch e.Code {
		case tools.CodeRateLimited:
			return t.fail(tools.CodeRateLimited, "Too many requests; please wait a moment and try again.")
		case tools.CodeInternal:
			t.a.opts.Logger.Error("tool call failed", "tool", searchTool, "channel", "chat", "err", e.Error())
		}
		return t.fail(tools.CodeUnavailable, "Search is not available right now. Please try again shortly.")
	}
	var out struct {
		Results []struct {
			Title   string `json:"title"`
			URL     string `json:"url"`
			Anchor  string `json:"anchor"`
			Snippet string `json:"snippet"`
		} `json:"results"`
	}
	if b, err := json.Marshal(res.StructuredContent); err == nil && !res.IsError {
		_ = json.Unmarshal(b, &out)
	}
	if len(out.Results) == 0 {
		if err := t.delta("This is a search result, not a written answer: no page of this site matches your question. Try other words, or use the site's contact page."); err != nil {
			return err
		}
		return t.finish(ModeRetrieval, reason)
	}
	if err := t.delta(retrievalIntro[reason] + "\n\n"); err != nil {
		return err
	}
	for i, r := range out.Results {
		link := r.URL
		if r.Anchor != "" {
			link += "#" + r.Anchor
		}
		line := fmt.Sprintf("%d. [%s](%s)", i+1, oneLine(r.Title), link)
		if s := oneLine(r.Snippet); s != "" {
			line += "\n   " + cutRunes(s, 300)
			if len([]rune(s)) > 300 {
				line += "…"
			}
		}
		if err := t.delta(line + "\n"); err != nil {
			return err
		}
	}
	t.mu.Lock()
	for _, r := range out.Results {
		if r.URL != "" {
			t.addSource(Source{Title: r.Title, URL: r.URL, Anchor: r.Anchor})
		}
	}
	t.mu.Unlock()
	return t.finish(ModeRetrieval, reason)
}

// searchQuery is the visitor's message cut to what search_site accepts: its schema's
// maxLength, and at most 200 characters (about 50 tokens, within the token cap), cut at
// a word boundary.
func (a *Assistant) searchQuery(message string) string {
	limit := 200
	if tool, ok := a.opts.Registry.Lookup(searchTool); ok {
		var schema struct {
			Properties struct {
				Query struct {
					MaxLength int `json:"maxLength"`
				} `json:"query"`
			} `json:"properties"`
		}
		if json.Unmarshal(tool.InputSchema, &schema) == nil && schema.Properties.Query.MaxLength > 0 {
			limit = min(limit, schema.Properties.Query.MaxLength)
		}
	}
	q := oneLine(message)
	if n := len([]rune(q)); n > limit {
		q = cutRunes(q, limit)
		if i := strings.LastIndexFunc(q, unicode.IsSpace); i > limit/2 {
			q = q[:i]
		}
	}
	// Scripts with more tokens per character must stay within search's token cap too.
	for n := len([]rune(q)); llm.CountTokens(q) > maxQueryTokens && n > 8; n = n * 3 / 4 {
		q = cutRunes(q, n*3/4)
	}
	return q
}

// maxQueryTokens is below search_site's default token cap (96).
const maxQueryTokens = 64

// oneLine collapses runs of white space, newlines included.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
