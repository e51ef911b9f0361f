package assistant

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// maxCallsPerRound bounds the tool calls of one round, in either mode.
const maxCallsPerRound = 8

// toolRequest is one tool call asked for in JSON mode.
type toolRequest struct {
	Tool string
	Args json.RawMessage
}

type replyKind int

const (
	replyUndecided replyKind = iota
	replyText
	replyRequest
)

// classifyReply decides from the start of a JSON-mode reply whether it is a tool
// request or text for the visitor, or that more of it is needed to tell.
func classifyReply(s string) replyKind {
	t := strings.TrimLeft(s, " \t\r\n")
	switch {
	case t == "":
		return replyUndecided
	case t[0] == '{':
		return replyRequest
	case t[0] == '[':
		rest := strings.TrimLeft(t[1:], " \t\r\n")
		switch {
		case rest == "":
			return replyUndecided
		case rest[0] == '{' || rest[0] == ']':
			return replyRequest
		}
		return replyText
	case strings.HasPrefix(t, "```"):
		line, body, complete := strings.Cut(t[3:], "\n")
		lang := strings.ToLower(strings.TrimSpace(line))
		if !complete {
			if strings.HasPrefix("json", lang) && len(line) < 8 {
				return replyUndecided // the fence's language may still become json
			}
			return replyText
		}
		if lang != "" && lang != "json" {
			return replyText
		}
		return classifyReply(body)
	case strings.HasPrefix("```", t):
		return replyUndecided
	}
	return replyText
}

// parseToolRequests parses a reply that classifyReply calls a request: one object or
// an array of them, optionally in a ```json fence. The error says what is wrong in
// words a model can act on.
func parseToolRequests(reply string) ([]toolRequest, error) {
	t := strings.TrimSpace(reply)
	if strings.HasPrefix(t, "```") {
		_, body, _ := strings.Cut(t, "\n")
		if i := strings.LastIndex(body, "```"); i >= 0 {
			body = body[:i]
		}
		t = strings.TrimSpace(body)
	}
	dec := json.NewDecoder(strings.NewReader(t))
	dec.UseNumber()
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("your reply is not valid JSON (%v)", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("your reply has text after the JSON; a tool request must be the whole reply")
	}
	var items []json.RawMessage
	if raw[0] == '[' {
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, errors.New("a list of tool requests must be a JSON array of objects")
		}
		if len(items) == 0 {
			return nil, errors.New("the list of tool requests is empty")
		}
	} else {
		items = []json.RawMessage{raw}
	}
	if len(items) > maxCallsPerRound {
		return nil, fmt.Errorf("at most %d tool requests are allowed at once, got %d", maxCallsPerRound, len(items))
	}
	out := make([]toolRequest, 0, len(items))
	for i, item := range items {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(item, &fields); err != nil {
			return nil, fmt.Errorf("request %d is not a JSON object", i+1)
		}
		nameRaw, ok := fields["tool"]
		if !ok {
			nameRaw = fields["name"]
		}
		var name string
		if err := json.Unmarshal(nameRaw, &name); err != nil || name == "" {
			return nil, fmt.Errorf(`request %d needs "tool", the tool's name as a string`, i+1)
		}
		args, ok := fields["args"]
		if !ok {
			args = fields["arguments"]
		}
		if a := bytes.TrimSpace(args); len(a) == 0 || bytes.Equal(a, []byte("null")) {
			args = json.RawMessage("{}")
		} else if a[0] != '{' {
			return nil, fmt.Errorf(`request %d: "args" must be a JSON object of the tool's arguments`, i+1)
		}
		out = append(out, toolRequest{Tool: name, Args: args})
	}
	return out, nil
}
