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

// retrievalLimit is how many pages a retrieval-only answer lists.
const retrievalLimit = 5

// searchHit is one result of a tool with tools.CapabilitySiteSearch.
type searchHit struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	Anchor  string `json:"anchor"`
	Snippet string `json:"snippet"`
}

// retrieve answers the turn with the best matching pages from the site's search (the
// tool that declares tools.CapabilitySiteSearch), called through the registry like any
// chat tool call.
func (t *turnState) retrieve(ctx context.Context, turn Turn, reason string) error {
	search, ok := t.a.opts.Registry.WithCapability(tools.CapabilitySiteSearch)
	if !ok {
		return t.say(reason, t.words.noSearch)
	}
	query := t.a.searchQuery(search, turn.Messages[len(turn.Messages)-1].Content)
	if query == "" {
		return t.say(reason, t.words.nothingToFind)
	}
	hits, err := t.search(ctx, search.Name, query)
	if err != nil || hits == nil {
		return err
	}
	if len(hits) == 0 {
		return t.say(reason, t.words.noMatch)
	}
	if err := t.delta(t.words.retrievalIntro[reason] + "\n\n"); err != nil {
		return err
	}
	for i, h := range hits {
		if err := t.delta(hitLine(i, h)); err != nil {
			return err
		}
	}
	t.mu.Lock()
	for _, h := range hits {
		if h.URL != "" {
			t.addSource(Source{Title: h.Title, URL: h.URL, Anchor: h.Anchor})
		}
	}
	t.mu.Unlock()
	return t.finish(ModeRetrieval, reason)
}

// say answers the turn with text alone.
func (t *turnState) say(reason, text string) error {
	if err := t.delta(text); err != nil {
		return err
	}
	return t.finish(ModeRetrieval, reason)
}

// search calls the search tool as the chat calls any tool, with its events. A failed
// call ends the turn with an error event, and search returns nil hits and the error of
// sending it; no results is an empty, non-nil slice.
func (t *turnState) search(ctx context.Context, tool, query string) ([]searchHit, error) {
	args, err := json.Marshal(map[string]any{"query": query, "limit": retrievalLimit})
	if err != nil {
		return nil, fmt.Errorf("assistant: %w", err)
	}
	id := t.nextID()
	if err := t.emit(EventToolCall, ToolCall{ID: id, Name: tool}); err != nil {
		return nil, err
	}
	callCtx, cancel := context.WithTimeout(tools.WithRequest(ctx, t.req), t.a.opts.ToolTimeout+5*time.Second)
	res, callErr := t.a.opts.Registry.Call(callCtx, tool, args)
	cancel()
	if err := t.emit(EventToolResult, ToolResult{ID: id, Name: tool, OK: callErr == nil && !res.IsError}); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if callErr != nil {
		e := tools.AsError(callErr)
		switch e.Code {
		case tools.CodeRateLimited:
			return nil, t.fail(tools.CodeRateLimited, t.words.rateLimited)
		case tools.CodeInternal:
			t.a.opts.Logger.Error("tool call failed", "tool", tool, "channel", "chat", "err", e.Error())
		}
		return nil, t.fail(tools.CodeUnavailable, t.words.searchDown)
	}
	out := struct {
		Results []searchHit `json:"results"`
	}{Results: []searchHit{}}
	if b, err := json.Marshal(res.StructuredContent); err == nil && !res.IsError {
		_ = json.Unmarshal(b, &out)
	}
	if out.Results == nil {
		out.Results = []searchHit{}
	}
	return out.Results, nil
}

// hitLine is one numbered Markdown line of a retrieval-only answer.
func hitLine(i int, h searchHit) string {
	link := h.URL
	if h.Anchor != "" {
		link += "#" + h.Anchor
	}
	line := fmt.Sprintf("%d. [%s](%s)", i+1, oneLine(h.Title), link)
	if s := oneLine(h.Snippet); s != "" {
		cut := cutRunes(s, 300)
		if strings.Count(cut, "**")%2 == 1 {
			// Cut inside a match: its opening ** alone would show as such.
			i := strings.LastIndex(cut, "**")
			cut = cut[:i] + cut[i+2:]
		}
		line += "\n   " + cut
		if len([]rune(s)) > 300 {
			line += "…"
		}
	}
	return line + "\n"
}

// searchQuery is the visitor's message cut to what search_site accepts: its schema's
// maxLength, and at most 200 characters (about 50 tokens, within the token cap), cut at
// a word boundary.
func (a *Assistant) searchQuery(tool *tools.Tool, message string) string {
	limit := 200
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
