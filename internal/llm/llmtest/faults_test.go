package llmtest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/llm/llmtest"
)

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: %s", what)
		}
		<-tick.C
	}
}

// closesWithin runs a server's Close in the background and reports whether it returned
// within d: Close waits for every handler, so a handler still waiting out a delay
// holds it.
func closesWithin(closeServer func(), d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		closeServer()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// postRaw posts body to url and returns the status, or the transport error.
func postRaw(ctx context.Context, url string, body any) (int, http.Header, []byte, error) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, err = out.ReadFrom(resp.Body)
	return resp.StatusCode, resp.Header, out.Bytes(), err
}

// Every request is counted on arrival, whatever becomes of it; only answered ones add
// to Tokens.
func TestServerReceivedTokens(t *testing.T) {
	srv := llmtest.NewServer(t, 32)
	url := srv.BaseURL() + "/embeddings"
	body := map[string]any{"model": "m", "input": []string{"privacy policy", "day rate"}}
	per := llm.CountTokens("privacy policy") + llm.CountTokens("day rate")

	if status, _, _ := post(t, url, body); status != 200 {
		t.Fatalf("status %d", status)
	}
	srv.SetFail(503)
	if status, _, _ := post(t, url, body); status != 503 {
		t.Fatalf("status %d while failing", status)
	}
	srv.SetFail(0)
	srv.SetReset(true)
	if _, _, _, err := postRaw(context.Background(), url, body); err == nil {
		t.Fatal("a reset request got an answer")
	}
	srv.SetReset(false)
	if got, want := srv.ReceivedTokens(), 3*per; got != want {
		t.Errorf("received tokens %d, want %d: three requests of %d", got, want, per)
	}
	if srv.Tokens() != per || srv.Calls() != 3 {
		t.Errorf("tokens %d, calls %d: want %d tokens of the one answered request and 3 calls", srv.Tokens(), srv.Calls(), per)
	}
	if status, _, _ := post(t, url, body); status != 200 {
		t.Errorf("status %d after SetReset(false)", status)
	}
}

// SetTokensPerWord changes the count the server reports and adds up, and 0 restores
// the local count.
func TestServerTokensPerWord(t *testing.T) {
	srv := llmtest.NewServer(t, 32)
	url := srv.BaseURL() + "/embeddings"
	body := map[string]any{"model": "m", "input": []string{"a privacy policy", "the  day\trate"}}
	srv.SetTokensPerWord(8)
	status, _, resp := post(t, url, body)
	if status != 200 || resp.Usage == nil || resp.Usage.PromptTokens != 48 || resp.Usage.TotalTokens != 48 {
		t.Fatalf("status %d, usage %+v: want 8 tokens for each of 6 words", status, resp.Usage)
	}
	if srv.Tokens() != 48 || srv.ReceivedTokens() != 48 {
		t.Errorf("tokens %d, received %d, want 48 each", srv.Tokens(), srv.ReceivedTokens())
	}
	srv.SetTokensPerWord(0)
	local := llm.CountTokens("a privacy policy") + llm.CountTokens("the  day\trate")
	if _, _, resp := post(t, url, body); resp.Usage == nil || resp.Usage.PromptTokens != local {
		t.Errorf("usage %+v after SetTokensPerWord(0), want the local count %d", resp.Usage, local)
	}
	if srv.ReceivedTokens() != 48+local {
		t.Errorf("received %d, want %d", srv.ReceivedTokens(), 48+local)
	}
}

// A delayed request whose client gives up is counted, and its handler returns at once
// instead of waiting out the delay.
func TestServerDelayAbandoned(t *testing.T) {
	srv := llmtest.NewServer(t, 32)
	srv.SetDelay(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, _, _, err := postRaw(ctx, srv.BaseURL()+"/embeddings", map[string]any{"model": "m", "input": "cookies"})
		errc <- err
	}()
	waitFor(t, "the request did not arrive", func() bool { return srv.ReceivedTokens() > 0 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if !closesWithin(srv.Close, 10*time.Second) {
		t.Fatal("the handler still waits out the delay after its client went away")
	}
	if srv.ReceivedTokens() != llm.CountTokens("cookies") || srv.Tokens() != 0 {
		t.Errorf("received %d, tokens %d: want the abandoned request received and not answered", srv.ReceivedTokens(), srv.Tokens())
	}
}

// Under SetCPU, work whose client went away stops, and counts as computed only with
// SetKeepComputing, where it runs to its end; an answered request counts either way.
func TestServerKeepComputing(t *testing.T) {
	body := map[string]any{"model": "m", "input": []string{"privacy policy", "day rate"}}
	per := llm.CountTokens("privacy policy") + llm.CountTokens("day rate")
	for _, keep := range []bool{false, true} {
		srv := llmtest.NewServer(t, 32)
		url := srv.BaseURL() + "/embeddings"
		if status, _, _ := post(t, url, body); status != 200 || srv.ComputedTokens() != per {
			t.Fatalf("keep %t: status %d, computed %d: want an answered request computed (%d)", keep, status, srv.ComputedTokens(), per)
		}
		srv.SetCPU(100*time.Millisecond, 0)
		srv.SetKeepComputing(keep)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, _, _, err := postRaw(ctx, url, body)
			errc <- err
		}()
		waitFor(t, "the request did not arrive", func() bool { return srv.ReceivedTokens() == 2*per })
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("keep %t: error %v, want context.Canceled", keep, err)
		}
		srv.WaitComputing()
		want := per
		if keep {
			want = 2 * per
		}
		if srv.ComputedTokens() != want || srv.Tokens() != per {
			t.Errorf("keep %t: computed %d, answered %d; want %d computed and %d answered", keep, srv.ComputedTokens(), srv.Tokens(), want, per)
		}
	}
}

// chatUsage posts a streaming chat request of messages and returns the status, headers
// and the prompt tokens of the usage chunk (-1 without one).
func chatUsage(ctx context.Context, srv *llmtest.ChatServer, messages ...string) (int, http.Header, int, error) {
	var msgs []map[string]string
	for _, m := range messages {
		msgs = append(msgs, map[string]string{"role": "user", "content": m})
	}
	body := map[string]any{"model": "m", "messages": msgs, "stream": true, "stream_options": map[string]bool{"include_usage": true}}
	status, h, b, err := postRaw(ctx, srv.BaseURL()+"/chat/completions", body)
	prompt := -1
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var chunk struct {
			Usage *struct {
				PromptTokens int `json:"prompt_tokens"`
			} `json:"usage"`
		}
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if ok && json.Unmarshal([]byte(data), &chunk) == nil && chunk.Usage != nil {
			prompt = chunk.Usage.PromptTokens
		}
	}
	return status, h, prompt, err
}

// The chat fake counts prompt tokens on arrival, reports its own per-word count, fails
// with Retry-After and resets without taking scripted replies.
func TestChatServerFaults(t *testing.T) {
	srv := llmtest.NewChatServer(t)
	srv.Script(llmtest.Say("first"), llmtest.Say("second"), llmtest.Say("third"))
	ctx := context.Background()
	_, _, prompt, err := chatUsage(ctx, srv, "hello there")
	if want := 3 + 4 + llm.CountTokens("hello there"); err != nil || prompt != want {
		t.Fatalf("prompt tokens %d (%v), want the local count %d", prompt, err, want)
	}
	srv.SetTokensPerWord(8)
	if _, _, prompt, _ = chatUsage(ctx, srv, "hello there", "and again you"); prompt != 3+2*4+8*5 {
		t.Errorf("prompt tokens %d, want %d with 8 per word", prompt, 3+2*4+8*5)
	}
	srv.SetFail(http.StatusTooManyRequests)
	srv.SetRetryAfter(1500 * time.Millisecond)
	status, h, _, _ := chatUsage(ctx, srv, "one")
	if status != 429 || h.Get("Retry-After") != "2" || h.Get("Retry-After-Ms") != "1500" {
		t.Errorf("status %d, Retry-After %q, Retry-After-Ms %q: want 429, 2, 1500", status, h.Get("Retry-After"), h.Get("Retry-After-Ms"))
	}
	srv.SetFail(0)
	srv.SetReset(true)
	if _, _, _, err := chatUsage(ctx, srv, "two words"); err == nil {
		t.Error("a reset request got an answer")
	}
	srv.SetReset(false)
	srv.SetTokensPerWord(0)
	want := (3 + 4 + llm.CountTokens("hello there")) + (3 + 2*4 + 8*5) + (3 + 4 + 8) + (3 + 4 + 16)
	if srv.ReceivedTokens() != want || srv.Calls() != 4 || len(srv.Requests()) != 4 {
		t.Errorf("received %d tokens in %d calls (%d recorded), want %d in 4", srv.ReceivedTokens(), srv.Calls(), len(srv.Requests()), want)
	}
	// The failed and the reset request took no scripted reply: the third one is next.
	resp, err := srv.Client(t).Stream(ctx, llm.ChatRequest{Messages: []llm.ChatMessage{{Role: "user", Content: "x"}}}, func(string) error { return nil })
	if err != nil || resp.Text != "third" {
		t.Errorf("text %q (%v), want the third scripted reply", resp.Text, err)
	}
}

// SetDelay holds the answer back; a client that gives up during it is noticed, and the
// handler returns at once.
func TestChatServerDelay(t *testing.T) {
	srv := llmtest.NewChatServer(t)
	srv.SetDelay(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, _, _, err := chatUsage(ctx, srv, "hello")
		errc <- err
	}()
	waitFor(t, "the request did not arrive", func() bool { return srv.ReceivedTokens() > 0 })
	select {
	case err := <-errc:
		t.Fatalf("answered during the delay: %v", err)
	default:
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if !srv.WaitCancelled(10 * time.Second) {
		t.Error("the cancellation during the delay was not noticed")
	}
	if !closesWithin(srv.Close, 10*time.Second) {
		t.Error("the handler still waits out the delay after its client went away")
	}
}
