package llmtest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/llm/llmtest"
)

func streamOnce(ctx context.Context, chat *llm.Chat, onDelta func(string) error) (*llm.ChatResponse, error) {
	return chat.Stream(ctx, llm.ChatRequest{Messages: []llm.ChatMessage{{Role: "user", Content: "Hello"}}}, onDelta)
}

// FirstDelay holds the stream's first chunk back: no text arrives before it has passed.
func TestChatServerFirstDelay(t *testing.T) {
	const delay = 30 * time.Millisecond
	srv := llmtest.NewChatServer(t)
	reply := llmtest.Say("Hello there.")
	reply.FirstDelay = delay
	srv.Script(reply)
	chat := srv.Client(t)
	start := time.Now()
	var first time.Duration
	resp, err := streamOnce(context.Background(), chat, func(string) error {
		if first == 0 {
			first = time.Since(start)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "Hello there." {
		t.Errorf("text %q", resp.Text)
	}
	if first < delay {
		t.Errorf("first text after %s, before the first delay of %s", first, delay)
	}
}

// A client that gives up during FirstDelay is noticed, as during ChunkDelay.
func TestChatServerFirstDelayCancelled(t *testing.T) {
	srv := llmtest.NewChatServer(t)
	arrived := make(chan struct{})
	srv.SetFallback(func(int, llmtest.ChatRequest) llmtest.ChatReply {
		close(arrived)
		return llmtest.ChatReply{Text: []string{"never"}, FirstDelay: time.Hour}
	})
	chat := srv.Client(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := streamOnce(ctx, chat, func(string) error { return nil })
		done <- err
	}()
	select {
	case <-arrived:
	case err := <-done:
		t.Fatalf("stream ended before the request arrived: %v", err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("stream error %v, want context.Canceled", err)
	}
	if !srv.WaitCancelled(10 * time.Second) {
		t.Error("the cancellation during the first delay was not noticed")
	}
}

// DiscardRequests keeps what was recorded and stops recording; the fallback still
// counts every request.
func TestChatServerDiscardRequests(t *testing.T) {
	srv := llmtest.NewChatServer(t)
	var seen []int
	srv.SetFallback(func(n int, _ llmtest.ChatRequest) llmtest.ChatReply {
		seen = append(seen, n)
		return llmtest.Say("ok")
	})
	chat := srv.Client(t)
	for i := range 3 {
		if i == 1 {
			srv.DiscardRequests()
		}
		if _, err := streamOnce(context.Background(), chat, func(string) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if got := len(srv.Requests()); got != 1 {
		t.Errorf("%d requests recorded, want the 1 before DiscardRequests", got)
	}
	if len(seen) != 3 || seen[0] != 1 || seen[2] != 3 {
		t.Errorf("fallback saw n = %v, want [1 2 3]", seen)
	}
}
