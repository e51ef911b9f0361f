package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// ChatMessage is one message of a chat completion request.
type ChatMessage struct {
	Role       string // "system" | "user" | "assistant" | "tool"
	Content    string
	ToolCalls  []ToolCall // an assistant message's calls
	ToolCallID string     // a tool message's answer to a call
}

// ToolCall is a function call the model asked for. Arguments is the model's JSON text,
// not yet parsed: a model can send invalid JSON.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// ChatTool is a function offered to the model; Parameters is its JSON Schema, sent
// unchanged.
type ChatTool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// ChatRequest is one chat completion.
type ChatRequest struct {
	Messages []ChatMessage
	Tools    []ChatTool
	// NoToolCalls offers the tools (the conversation refers to them) but asks the model
	// not to call any (tool_choice "none").
	NoToolCalls bool
	// MaxTokens bounds the answer.
	MaxTokens int
}

// ChatUsage is what one completion cost. Reported is false when the provider said
// nothing and the numbers are our estimate.
type ChatUsage struct {
	PromptTokens     int
	CompletionTokens int
	TotalTokens      int
	Reported         bool
}

// ChatResponse is a completed answer: text, tool calls, or both.
type ChatResponse struct {
	Text         string
	ToolCalls    []ToolCall
	FinishReason string
	Usage        ChatUsage
}

// ChatOptions configures an OpenAI-compatible chat client. Zero values mean the
// defaults given per field.
type ChatOptions struct {
	// BaseURL is the API root including its version, e.g. "http://localhost:11434/v1"
	// for Ollama; required.
	BaseURL string
	// BaseURLSetting is how the configuration names BaseURL, e.g. "LLM_BASE_URL": the
	// error of a 404 under a base URL without /v1 says what to set it to.
	BaseURLSetting string
	// APIKey is sent as a bearer token; empty sends none (local servers).
	APIKey string
	// Model is the chat model; required.
	Model string
	// MaxRetries is how often opening the stream is repeated after 429, 5xx or a
	// connection failure, before any of the answer has arrived. Default 1; negative
	// means never.
	MaxRetries int
	// HTTPClient sends the requests. Default: a client on a copy of
	// http.DefaultTransport that keeps up to 64 idle connections per provider.
	HTTPClient *http.Client
	// Logger receives a line per retry (status, attempt, wait; never message text).
	// Nil discards.
	Logger *slog.Logger
}

// Chat streams chat completions from any OpenAI-compatible /v1/chat/completions
// endpoint: OpenAI, Ollama, vLLM, llama.cpp server, LiteLLM. It is safe for concurrent
// use. Deadlines come from the caller's context.
type Chat struct {
	client   *openai.Client
	model    string
	retry    retryPolicy
	endpoint endpoint
}

// NewChat returns a client for opts. It does not contact the provider.
func NewChat(opts ChatOptions) (*Chat, error) {
	if opts.Model == "" {
		return nil, errors.New("llm.NewChat: a model is required")
	}
	u, err := url.Parse(opts.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("llm.NewChat: base URL must be an absolute http(s) URL such as %q, got %q",
			DefaultOpenAIBaseURL, opts.BaseURL)
	}
	return &Chat{
		model: opts.Model,
		retry: retryPolicy{max: retries(opts.MaxRetries, 1), log: orDiscard(opts.Logger), what: "chat request", model: opts.Model,
			backoff: func(attempt int) time.Duration { return time.Duration(attempt) * 500 * time.Millisecond }},
		client:   newClient(opts.APIKey, opts.BaseURL, opts.HTTPClient),
		endpoint: newEndpoint(u, opts.BaseURLSetting),
	}, nil
}

// Model returns the configured model name.
func (c *Chat) Model() string { return c.model }

// Stream sends req and streams the answer: onDelta receives each piece of text as it
// arrives; an error from onDelta stops the stream and is returned. Tool calls are
// assembled from their deltas and returned whole. Usage is the provider's
// (stream_options.include_usage), or an estimate where it reports none. Errors for
// which IsUnavailable is true mean the provider is down, overloaded or too slow; errors
// never carry the provider's message text, which may echo the input; ProviderFailure and
// RetryAfter tell a circuit breaker what it needs of them. Under a context from Track
// every request counts in the Delivery: the one that opened the stream as answered once
// the stream was read to its end, and as unknown when it stopped before (it broke, ctx
// ended, or onDelta returned an error). A hook from WithAttemptHook is asked before each
// retry.
func (c *Chat) Stream(ctx context.Context, req ChatRequest, onDelta func(text string) error) (*ChatResponse, error) {
	cl := newCall(ctx)
	stream, err := c.open(ctx, cl, c.request(req))
	if err != nil {
		return nil, cl.finish(err)
	}
	defer stream.Close()
	resp, err := c.read(ctx, stream, onDelta)
	cl.streamEnded(err)
	if err != nil {
		return nil, cl.finish(err)
	}
	if !resp.Usage.Reported {
		resp.Usage.PromptTokens = EstimateChatTokens(req)
		resp.Usage.CompletionTokens = CountTokens(resp.Text)
		for _, tc := range resp.ToolCalls {
			resp.Usage.CompletionTokens += CountTokens(tc.Name) + CountTokens(tc.Arguments)
		}
	}
	if resp.Usage.TotalTokens == 0 {
		resp.Usage.TotalTokens = resp.Usage.PromptTokens + resp.Usage.CompletionTokens
	}
	return resp, nil
}

// open starts the stream, retrying what can be retried (with the provider's Retry-After
// when it gives one) within ctx's deadline. Every failed attempt is settled in cl; the
// one that opened the stream is settled when the stream ends.
func (c *Chat) open(ctx context.Context, cl *call, oreq openai.ChatCompletionRequest) (*openai.ChatCompletionStream, error) {
	for attempt := 1; ; attempt++ {
		a := cl.attempt()
		stream, err := c.client.CreateChatCompletionStream(withAttempt(ctx, a), oreq)
		if err == nil {
			return stream, nil
		}
		err = sanitize(err, chatInputs(oreq))
		cl.settle(a, err)
		wait, stop := c.retry.next(ctx, attempt, a.after, err, errChatUnavailable)
		if stop == nil {
			stop = cl.admit(ctx, attempt+1, err)
		}
		if stop == nil {
			stop = c.retry.wait(ctx, attempt, wait, err)
		}
		if stop != nil {
			return nil, fmt.Errorf("llm.Chat.Stream: %w", c.endpoint.explain(stop, "/chat/completions"))
		}
	}
}

// chatInputs is every text of a chat request that a provider's error message could quote.
func chatInputs(oreq openai.ChatCompletionRequest) []string {
	out := make([]string, 0, len(oreq.Messages))
	for _, m := range oreq.Messages {
		out = append(out, m.Content)
		for _, p := range m.MultiContent {
			out = append(out, p.Text)
		}
		for _, tc := range m.ToolCalls {
			out = append(out, tc.Function.Arguments)
		}
	}
	return out
}

// read reads the stream to its end: the text, passed on as it arrives, the tool calls
// assembled from their deltas, the finish reason and the reported usage.
func (c *Chat) read(ctx context.Context, stream *openai.ChatCompletionStream, onDelta func(text string) error) (*ChatResponse, error) {
	resp := &ChatResponse{}
	var text strings.Builder
	calls := &toolCallAssembler{}
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, fmt.Errorf("llm.Chat.Stream: %w", ctxErr)
			}
			return nil, fmt.Errorf("llm.Chat.Stream: %w", streamError(err))
		}
		if chunk.Usage != nil {
			resp.Usage = ChatUsage{PromptTokens: chunk.Usage.PromptTokens, CompletionTokens: chunk.Usage.CompletionTokens,
				TotalTokens: chunk.Usage.TotalTokens, Reported: true}
		}
		for _, choice := range chunk.Choices {
			if choice.Index != 0 {
				continue // we ask for one answer
			}
			if choice.FinishReason != "" {
				resp.FinishReason = string(choice.FinishReason)
			}
			for _, tc := range choice.Delta.ToolCalls {
				calls.add(tc)
			}
			if d := choice.Delta.Content; d != "" {
				text.WriteString(d)
				if err := onDelta(d); err != nil {
					return nil, err
				}
			}
		}
	}
	resp.Text = text.String()
	resp.ToolCalls = calls.result()
	return resp, nil
}

func (c *Chat) request(req ChatRequest) openai.ChatCompletionRequest {
	oreq := openai.ChatCompletionRequest{
		Model:         c.model,
		Stream:        true,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true},
		Messages:      make([]openai.ChatCompletionMessage, len(req.Messages)),
	}
	if req.MaxTokens > 0 {
		// OpenAI's reasoning models refuse max_tokens; most other servers know only it.
		if reasoningModel(c.model) {
			oreq.MaxCompletionTokens = req.MaxTokens
		} else {
			//lint:ignore SA1019 Ollama, vLLM and llama.cpp know max_tokens; not all know its successor.
			oreq.MaxTokens = req.MaxTokens
		}
	}
	for i, m := range req.Messages {
		om := openai.ChatCompletionMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			om.ToolCalls = append(om.ToolCalls, openai.ToolCall{
				ID: tc.ID, Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments},
			})
		}
		oreq.Messages[i] = om
	}
	for _, t := range req.Tools {
		oreq.Tools = append(oreq.Tools, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: t.Parameters,
		}})
	}
	if len(oreq.Tools) > 0 && req.NoToolCalls {
		oreq.ToolChoice = "none"
	}
	return oreq
}

func reasoningModel(model string) bool {
	for _, p := range []string{"o1", "o3", "o4", "gpt-5", "gpt-6"} {
		if strings.HasPrefix(model, p) {
			return true
		}
	}
	return false
}

// EstimateChatTokens estimates the prompt tokens of req: the cl100k count of every
// message and tool definition plus a few tokens of framing each, as OpenAI counts them.
func EstimateChatTokens(req ChatRequest) int {
	n := 3
	for _, m := range req.Messages {
		n += 4 + CountTokens(m.Content)
		for _, tc := range m.ToolCalls {
			n += 4 + CountTokens(tc.Name) + CountTokens(tc.Arguments)
		}
	}
	for _, t := range req.Tools {
		n += 8 + CountTokens(t.Name) + CountTokens(t.Description) + CountTokens(string(t.Parameters))
	}
	return n
}

// errChatUnavailable is ErrUnavailable with a message that names the chat provider.
var errChatUnavailable error = chatUnavailable{}

type chatUnavailable struct{}

func (chatUnavailable) Error() string        { return "chat provider unavailable" }
func (chatUnavailable) Is(target error) bool { return target == ErrUnavailable }

// streamError replaces an error that arrived inside the stream, whose text may echo
// the input, with one that names only its type and code. Such an error and a broken
// stream both mean the provider failed.
func streamError(err error) error {
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		if apiErr.HTTPStatusCode > 0 {
			return sanitize(err, nil)
		}
		code := ""
		switch c := apiErr.Code.(type) {
		case string:
			code = c
		case int:
			code = strconv.Itoa(c)
		}
		return fmt.Errorf("%w: the provider sent an error in the stream (type %q, code %q)", errChatUnavailable, apiErr.Type, code)
	}
	if errors.Is(err, openai.ErrTooManyEmptyStreamMessages) || isTransportFailure(err) {
		return fmt.Errorf("%w: %w", errChatUnavailable, err)
	}
	var syntaxErr *json.SyntaxError
	if errors.As(err, &syntaxErr) {
		return fmt.Errorf("%w: the provider sent a chunk that is not JSON", errChatUnavailable)
	}
	return fmt.Errorf("%w: reading the stream: %w", errChatUnavailable, err)
}

// toolCallAssembler joins tool-call deltas: the first delta of a call carries its index,
// id and name, later ones pieces of its arguments. Servers that send each call whole,
// or without an index, are understood too.
type toolCallAssembler struct {
	calls []ToolCall
	index map[int]int // delta index → position in calls
}

func (a *toolCallAssembler) add(tc openai.ToolCall) {
	pos := -1
	switch {
	case tc.Index != nil:
		if a.index == nil {
			a.index = map[int]int{}
		}
		if p, ok := a.index[*tc.Index]; ok {
			pos = p
		} else {
			a.index[*tc.Index] = len(a.calls)
		}
	case tc.ID == "" && len(a.calls) > 0:
		pos = len(a.calls) - 1 // a continuation without an index
	}
	if pos < 0 {
		a.calls = append(a.calls, ToolCall{})
		pos = len(a.calls) - 1
	}
	c := &a.calls[pos]
	if tc.ID != "" {
		c.ID = tc.ID
	}
	// Some servers repeat the name in every delta of a call.
	if n := tc.Function.Name; n != "" && n != c.Name {
		c.Name += n
	}
	c.Arguments += tc.Function.Arguments
}

func (a *toolCallAssembler) result() []ToolCall {
	out := a.calls[:0:0]
	for i, c := range a.calls {
		if c.Name == "" && c.Arguments == "" {
			continue
		}
		if c.ID == "" {
			c.ID = "call_" + strconv.Itoa(i+1)
		}
		out = append(out, c)
	}
	return out
}
