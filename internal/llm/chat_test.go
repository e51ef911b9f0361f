package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/llm/llmtest"
)

func newChat(t *testing.T, srv *llmtest.ChatServer) *llm.Chat {
	t.Helper()
	c, err := llm.NewChat(llm.ChatOptions{BaseURL: srv.BaseURL(), Model: "gpt-4o-mini"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNewChatChecksOptions(t *testing.T) {
	for _, opts := range []llm.ChatOptions{
		{BaseURL: "http://localhost:11434/v1"},
		{BaseURL: "localhost:11434", Model: "llama3.1"},
		{Model: "llama3.1"},
	} {
		if _, err := llm.NewChat(opts); err == nil {
			t.Errorf("NewChat(%+v): no error", opts)
		}
	}
}

// TestChatStream: text deltas arrive as they are streamed, tool-call deltas are joined
// into whole calls, the request carries the messages, tools and include_usage, and the
// provider's usage is taken.
func TestChatStream(t *testing.T) {
	srv := llmtest.NewChatServer(t)
	srv.Script(llmtest.ChatReply{
		Text: []string{"Let me ", "look."},
		ToolCalls: []llmtest.ToolCallReply{
			{ID: "call_a", Name: "search_site", Arguments: `{"query":"accessibility audit"}`},
			{ID: "call_b", Name: "get_free_slots", Arguments: `{"from":"2026-03-02","to":"2026-03-06"}`},
		},
	})
	var deltas []string
	req := llm.ChatRequest{
		Messages: []llm.ChatMessage{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hello"}},
		Tools: []llm.ChatTool{{Name: "search_site", Description: "Search.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`)}},
		MaxTokens: 100,
	}
	resp, err := newChat(t, srv).Stream(context.Background(), req, func(d string) error {
		deltas = append(deltas, d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Let me ", "look."}, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	want := []llm.ToolCall{
		{ID: "call_a", Name: "search_site", Arguments: `{"query":"accessibility audit"}`},
		{ID: "call_b", Name: "get_free_slots", Arguments: `{"from":"2026-03-02","to":"2026-03-06"}`},
	}
	if diff := cmp.Diff(want, resp.ToolCalls); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
	if resp.Text != "Let me look." || resp.FinishReason != "tool_calls" {
		t.Errorf("text %q, finish %q", resp.Text, resp.FinishReason)
	}
	if !resp.Usage.Reported || resp.Usage.PromptTokens == 0 || resp.Usage.TotalTokens != resp.Usage.PromptTokens+resp.Usage.CompletionTokens {
		t.Errorf("usage %+v", resp.Usage)
	}
	got := srv.Requests()[0]
	if got.Model != "gpt-4o-mini" || got.StreamOptions == nil || !got.StreamOptions.IncludeUsage || got.MaxTokens != 100 {
		t.Errorf("request %s", got.Body)
	}
	if len(got.Tools) != 1 || string(got.Tools[0].Function.Parameters) != `{"type":"object","properties":{"query":{"type":"string"}}}` {
		t.Errorf("tools were not sent unchanged: %s", got.Body)
	}
	if len(got.Messages) != 2 || got.Messages[1].Content != "Hello" {
		t.Errorf("messages %+v", got.Messages)
	}
}

// A conversation with tool calls and their results goes out in OpenAI's shape (the
// fake refuses tool messages that answer no call).
func TestChatStreamToolRound(t *testing.T) {
	srv := llmtest.NewChatServer(t)
	resp, err := newChat(t, srv).Stream(context.Background(), llm.ChatRequest{
		Messages: []llm.ChatMessage{
			{Role: "user", Content: "Hello"},
			{Role: "assistant", ToolCalls: []llm.ToolCall{{ID: "c1", Name: "search_site", Arguments: `{"query":"x"}`}}},
			{Role: "tool", ToolCallID: "c1", Content: "TOOL_RESULT search_site: {}"},
		},
		Tools:       []llm.ChatTool{{Name: "search_site", Description: "Search.", Parameters: json.RawMessage(`{"type":"object"}`)}},
		NoToolCalls: true,
	}, func(string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "Fake answer." {
		t.Errorf("text %q", resp.Text)
	}
	if got := srv.Requests()[0]; string(got.ToolChoice) != `"none"` {
		t.Errorf("tool_choice %s", got.ToolChoice)
	}
}

func TestChatStreamUsageEstimated(t *testing.T) {
	srv := llmtest.NewChatServer(t)
	srv.Script(llmtest.ChatReply{Text: []string{"hello world"}, OmitUsage: true})
	req := llm.ChatRequest{Messages: []llm.ChatMessage{{Role: "user", Content: "hello"}}}
	resp, err := newChat(t, srv).Stream(context.Background(), req, func(string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	want := llm.ChatUsage{PromptTokens: llm.EstimateChatTokens(req), CompletionTokens: 2}
	want.TotalTokens = want.PromptTokens + want.CompletionTokens
	if resp.Usage != want {
		t.Errorf("usage %+v, want %+v", resp.Usage, want)
	}
}

func TestChatStreamFailures(t *testing.T) {
	for _, tc := range []struct {
		name            string
		replies         []llmtest.ChatReply
		wantUnavailable bool
		wantCalls       int
	}{
		{name: "503 twice", replies: []llmtest.ChatReply{{Status: 503}, {Status: 503}}, wantUnavailable: true, wantCalls: 2},
		{name: "503 then an answer", replies: []llmtest.ChatReply{{Status: 503}, llmtest.Say("ok")}, wantCalls: 2},
		{name: "401 is not retried", replies: []llmtest.ChatReply{{Status: 401}}, wantCalls: 1},
		{name: "error inside the stream", replies: []llmtest.ChatReply{{Text: []string{"par"}, FailMidStream: true}}, wantUnavailable: true, wantCalls: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewChatServer(t)
			srv.Script(tc.replies...)
			_, err := newChat(t, srv).Stream(context.Background(), llm.ChatRequest{
				Messages: []llm.ChatMessage{{Role: "user", Content: "secret question"}},
			}, func(string) error { return nil })
			last := tc.replies[len(tc.replies)-1]
			if (err != nil) != (last.Status != 0 || last.FailMidStream) {
				t.Fatalf("err %v", err)
			}
			if got := llm.IsUnavailable(err); got != tc.wantUnavailable {
				t.Errorf("IsUnavailable(%v) = %v", err, got)
			}
			if err != nil && (strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "processing your request")) {
				t.Errorf("the error carries provider or input text: %v", err)
			}
			if srv.Calls() != tc.wantCalls {
				t.Errorf("%d calls, want %d", srv.Calls(), tc.wantCalls)
			}
		})
	}
}

// Cancelling the context cancels the provider's request.
func TestChatStreamCancel(t *testing.T) {
	srv := llmtest.NewChatServer(t)
	srv.Script(llmtest.ChatReply{Text: []string{"Hel"}, Hang: true})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := newChat(t, srv).Stream(ctx, llm.ChatRequest{Messages: []llm.ChatMessage{{Role: "user", Content: "hi"}}},
			func(string) error { cancel(); return nil })
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || llm.IsUnavailable(err) {
			t.Fatalf("err %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Stream did not return after cancel")
	}
	if !srv.WaitCancelled(5 * time.Second) {
		t.Fatal("the provider did not see its request cancelled")
	}
}

func TestChatServerRefusesOrphanToolMessage(t *testing.T) {
	srv := llmtest.NewChatServer(t)
	_, err := newChat(t, srv).Stream(context.Background(), llm.ChatRequest{
		Messages: []llm.ChatMessage{{Role: "user", Content: "hi"}, {Role: "tool", ToolCallID: "nope", Content: "x"}},
	}, func(string) error { return nil })
	var se *llm.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusBadRequest {
		t.Fatalf("err %v", err)
	}
}
