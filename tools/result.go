package tools

import (
	"encoding/json"
	"fmt"
)

// Content is one block of a tool result's content. Only text blocks are produced.
type Content struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Result is the MCP-shaped outcome of a tool call. A failure the calling model should
// read and act on is a Result with IsError set, not a Go error.
type Result struct {
	Content           []Content `json:"content"`
	StructuredContent any       `json:"structuredContent,omitempty"`
	IsError           bool      `json:"isError"`
}

// TextResult returns a successful result holding one text block.
func TextResult(text string) *Result {
	return &Result{Content: []Content{{Type: "text", Text: text}}}
}

// StructuredResult returns a successful result whose structured content is v and whose
// text block is v as JSON, for clients that read only text.
func StructuredResult(v any) (*Result, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("tools.StructuredResult: %w", err)
	}
	return &Result{Content: []Content{{Type: "text", Text: string(b)}}, StructuredContent: json.RawMessage(b)}, nil
}

// ErrorResult returns a tool failure for the calling model to read.
func ErrorResult(format string, args ...any) *Result {
	return &Result{Content: []Content{{Type: "text", Text: fmt.Sprintf(format, args...)}}, IsError: true}
}
