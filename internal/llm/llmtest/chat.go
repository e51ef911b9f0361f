package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/llm"
)

// ChatServer is a fake OpenAI-compatible chat completions provider
// (POST /v1/chat/completions, streaming only). It answers each request with the next
// scripted ChatReply in the real wire format (SSE lines "data: {chat.completion.chunk}",
// then "data: [DONE]"), counts calls, records every request it receives (until
// DiscardRequests), and notices when a client cancels one. It checks requests as OpenAI
// does where that catches mistakes: a tool message must answer a preceding assistant tool
// call.
type ChatServer struct {
	*httptest.Server

	calls          atomic.Int64
	cancelled      atomic.Int64
	receivedTokens atomic.Int64 // prompt tokens of every request, counted on arrival
	cancelCh       chan struct{}

	mu       sync.Mutex
	script   []ChatReply
	fallback func(n int, req ChatRequest) ChatReply
	requests []ChatRequest
	received int  // requests received, recorded or not
	forget   bool // DiscardRequests: count requests without keeping them
	faults   chatFaults
}

// ChatReply scripts the answer to one request.
type ChatReply struct {
	// Text is streamed as one content delta per element.
	Text []string
	// ToolCalls are streamed as tool-call deltas: id, type and name first, then the
	// arguments in two pieces.
	ToolCalls []ToolCallReply
	// Status, when set, answers with this HTTP error instead of a stream.
	Status int
	// FailMidStream sends an error object inside the stream after Text, then ends.
	FailMidStream bool
	// Hang stops after Text and ToolCalls and sends nothing more until the client
	// cancels the request, which Cancellations then counts.
	Hang bool
	// ChunkDelay is waited before each chunk.
	ChunkDelay time.Duration
	// FirstDelay is waited once, before the first chunk (the response headers go out
	// with it), as a model's time to first token; ChunkDelay is waited as well.
	FirstDelay time.Duration
	// OmitUsage leaves out the usage chunk even when the request asks for it.
	OmitUsage bool
}

// ToolCallReply is one tool call of a scripted reply.
type ToolCallReply struct {
	ID        string // default call_<n>
	Name      string
	Arguments string
}

// Say is a reply that streams text a word at a time.
func Say(text string) ChatReply {
	return ChatReply{Text: strings.SplitAfter(text, " ")}
}

// CallTools is a reply that calls tools; each call is a name and its arguments as JSON.
func CallTools(calls ...ToolCallReply) ChatReply { return ChatReply{ToolCalls: calls} }

// ChatRequest is a request as the fake received it.
type ChatRequest struct {
	Model               string          `json:"model"`
	Messages            []ChatMessage   `json:"messages"`
	Tools               []ChatToolDef   `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	Stream              bool            `json:"stream"`
	StreamOptions       *StreamOptions  `json:"stream_options"`
	MaxTokens           int             `json:"max_tokens"`
	MaxCompletionTokens int             `json:"max_completion_tokens"`
	// Body is the request body as sent.
	Body []byte `json:"-"`
}

// StreamOptions are a request's stream_options.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// ChatMessage is a message of a received request.
type ChatMessage struct {
	Role       string         `json:"role"`
	Content    string         `json:"content"`
	ToolCalls  []ChatToolCall `json:"tool_calls"`
	ToolCallID string         `json:"tool_call_id"`
}

// ChatToolCall is a tool call of an assistant message in a received request.
type ChatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// ChatToolDef is a tool offered in a received request.
type ChatToolDef struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// NewChatServer starts a fake chat provider and closes it when the test ends. Without
// a script it answers every request with a short text.
func NewChatServer(t testing.TB) *ChatServer {
	t.Helper()
	s := StartChatServer()
	t.Cleanup(s.Close)
	return s
}

// StartChatServer starts a fake chat provider outside a test (the bench); the caller
// closes it. Without a script it answers every request with a short text.
func StartChatServer() *ChatServer {
	s := &ChatServer{cancelCh: make(chan struct{}, 64)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown_url",
			fmt.Sprintf("Unknown request URL: %s %s", r.Method, r.URL.Path))
	})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.calls.Add(1)
		mux.ServeHTTP(w, r)
	}))
	return s
}

// BaseURL is what a client takes as its API root, ending in /v1.
func (s *ChatServer) BaseURL() string { return s.URL + "/v1" }

// Client is a chat client of the fake, model "fake-model", that does not retry.
func (s *ChatServer) Client(t testing.TB) *llm.Chat {
	t.Helper()
	chat, err := llm.NewChat(llm.ChatOptions{BaseURL: s.BaseURL(), Model: "fake-model", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return chat
}

// Script queues replies, one per coming request.
func (s *ChatServer) Script(replies ...ChatReply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, replies...)
}

// SetFallback answers the requests that find the script empty; n counts requests from 1.
func (s *ChatServer) SetFallback(f func(n int, req ChatRequest) ChatReply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fallback = f
}

// DiscardRequests stops recording requests, for a long run: Requests returns those
// received before, and the fallback's n still counts every request.
func (s *ChatServer) DiscardRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forget = true
}

// Calls is the number of requests received, failed ones included.
func (s *ChatServer) Calls() int { return int(s.calls.Load()) }

// Requests returns every chat request received, in order.
func (s *ChatServer) Requests() []ChatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ChatRequest(nil), s.requests...)
}

// Cancellations is the number of requests the client cancelled while the fake was
// still answering.
func (s *ChatServer) Cancellations() int { return int(s.cancelled.Load()) }

// WaitCancelled waits up to d for a request to be cancelled by its client.
func (s *ChatServer) WaitCancelled(d time.Duration) bool {
	select {
	case <-s.cancelCh:
		return true
	case <-time.After(d):
		return false
	}
}

func (s *ChatServer) handleChat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", nil, "Request body too large.")
		return
	}
	var req ChatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", nil, "We could not parse the JSON body of your request.")
		return
	}
	req.Body = body
	n, reply, f, prompt := s.arrive(req)
	if !wait(r.Context(), f.delay) {
		s.noteCancel()
		return
	}
	switch {
	case f.reset:
		resetConnection(w)
		return
	case f.status != 0:
		writeFailure(w, f.status, f.retryAfter)
		return
	}
	if msg := checkChatRequest(req); msg != "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", nil, msg)
		return
	}
	if reply.Status != 0 {
		writeError(w, reply.Status, "server_error", nil, http.StatusText(reply.Status))
		return
	}
	s.stream(w, r, n, req, reply, prompt)
}

// checkChatRequest returns what OpenAI would refuse in req, or "".
func checkChatRequest(req ChatRequest) string {
	switch {
	case req.Model == "":
		return "you must provide a model parameter"
	case len(req.Messages) == 0:
		return "'messages' must contain at least one message."
	case !req.Stream:
		return "this fake answers streaming requests only"
	}
	for _, t := range req.Tools {
		if t.Type != "function" || t.Function.Name == "" || !bytes.HasPrefix(bytes.TrimSpace(t.Function.Parameters), []byte("{")) {
			return "each tool needs type function, a name and object parameters"
		}
	}
	open := map[string]bool{} // tool calls not answered yet
	for i, m := range req.Messages {
		switch m.Role {
		case "system", "user", "assistant", "developer":
			if len(open) > 0 {
				return fmt.Sprintf("messages[%d]: an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'", i)
			}
			for _, tc := range m.ToolCalls {
				if m.Role != "assistant" || tc.ID == "" || tc.Function.Name == "" {
					return fmt.Sprintf("messages[%d]: invalid tool call", i)
				}
				open[tc.ID] = true
			}
		case "tool":
			if !open[m.ToolCallID] {
				return fmt.Sprintf("messages[%d]: messages with role 'tool' must be a response to a preceding message with 'tool_calls'", i)
			}
			delete(open, m.ToolCallID)
		default:
			return fmt.Sprintf("messages[%d]: invalid role %q", i, m.Role)
		}
	}
	return ""
}

// chunkWriter writes one streamed answer's chunks as OpenAI does.
type chunkWriter struct {
	s            *ChatServer
	w            http.ResponseWriter
	r            *http.Request
	req          ChatRequest
	delay        time.Duration
	id           string
	created      int64
	includeUsage bool
}

// wait waits d; false means the client went away first.
func (c *chunkWriter) wait(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	select {
	case <-c.r.Context().Done():
		t.Stop()
		c.s.noteCancel()
		return false
	case <-t.C:
		return true
	}
}

// send writes one chunk; false means the client went away.
func (c *chunkWriter) send(choices []any, usage any) bool {
	if !c.wait(c.delay) {
		return false
	}
	chunk := map[string]any{"id": c.id, "object": "chat.completion.chunk", "created": c.created,
		"model": c.req.Model, "system_fingerprint": "fp_fake", "choices": choices}
	if c.includeUsage {
		chunk["usage"] = usage // null but in the last chunk, as OpenAI sends it
	}
	b, _ := json.Marshal(chunk)
	if _, err := fmt.Fprintf(c.w, "data: %s\n\n", b); err != nil {
		return false
	}
	if f, ok := c.w.(http.Flusher); ok {
		f.Flush()
	}
	return true
}

// delta writes a chunk of one choice with delta and finish reason.
func (c *chunkWriter) delta(delta map[string]any, finish any) bool {
	return c.send([]any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}, nil)
}

// toolCall writes call i: its id and name first, then its arguments in two halves.
func (c *chunkWriter) toolCall(n, i int, tc ToolCallReply) bool {
	callID := tc.ID
	if callID == "" {
		callID = fmt.Sprintf("call_fake%d_%d", n, i+1)
	}
	first := map[string]any{"index": i, "id": callID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": ""}}
	if !c.delta(map[string]any{"tool_calls": []any{first}}, nil) {
		return false
	}
	half := len(tc.Arguments) / 2
	for _, part := range []string{tc.Arguments[:half], tc.Arguments[half:]} {
		if part == "" {
			continue
		}
		d := map[string]any{"index": i, "function": map[string]any{"arguments": part}}
		if !c.delta(map[string]any{"tool_calls": []any{d}}, nil) {
			return false
		}
	}
	return true
}

// stream writes reply as the answer to request n, whose prompt tokens were counted on
// arrival.
func (s *ChatServer) stream(w http.ResponseWriter, r *http.Request, n int, req ChatRequest, reply ChatReply, prompt int) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	c := &chunkWriter{s: s, w: w, r: r, req: req, delay: reply.ChunkDelay, id: fmt.Sprintf("chatcmpl-fake%d", n),
		created: time.Now().Unix(), includeUsage: req.StreamOptions != nil && req.StreamOptions.IncludeUsage}
	if !c.wait(reply.FirstDelay) || !c.delta(map[string]any{"role": "assistant", "content": ""}, nil) {
		return
	}
	var out strings.Builder
	for _, t := range reply.Text {
		out.WriteString(t)
		if !c.delta(map[string]any{"content": t}, nil) {
			return
		}
	}
	if reply.FailMidStream {
		fmt.Fprint(w, `data: {"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`+"\n\n")
		return
	}
	for i, tc := range reply.ToolCalls {
		out.WriteString(tc.Name + tc.Arguments)
		if !c.toolCall(n, i, tc) {
			return
		}
	}
	if reply.Hang {
		<-r.Context().Done()
		s.noteCancel()
		return
	}
	finish := "stop"
	if len(reply.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	if !c.delta(map[string]any{}, finish) {
		return
	}
	if c.includeUsage && !reply.OmitUsage {
		completion := llm.CountTokens(out.String())
		c.send([]any{}, map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *ChatServer) noteCancel() {
	s.cancelled.Add(1)
	select {
	case s.cancelCh <- struct{}{}:
	default:
	}
}
