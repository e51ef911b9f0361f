package faults_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
	"github.com/sitetools/sitetools/internal/testkit"
)

// TestChatProviderFaults: whatever the chat model does — fail inside its stream, drop
// the connection, hang forever, answer 503, or not be there at all — POST /api/chat
// over real HTTP ends: with an error event when part of an answer already reached the
// visitor, otherwise with the retrieval-only answer (links from search_site) and
// message.done. The stream is closed by the server, within LLM_TIMEOUT plus a little
// when the model hangs, and never after anything but its terminal event.
func TestChatProviderFaults(t *testing.T) {
	const (
		llmTimeout = 2 * time.Second // LLM_TIMEOUT
		slack      = 3 * time.Second
	)
	fake := llmtest.NewChatServer(t)
	vars := serviceVars(t, pgtest.NewURL(t), false, map[string]string{
		"LLM_BASE_URL": fake.BaseURL(),
		"LLM_MODEL":    "fake-model",
		"LLM_TIMEOUT":  llmTimeout.String(),
		// Each fault is met on its own here: no circuit breaker opens after the first
		// few (test/cluster asserts the breaker).
		"LLM_BREAKER_FAILURES": "0",
	})
	ingestDemo(t, vars)
	serveBinary(t, vars)
	base := "http://" + vars["LISTEN_ADDR"]
	client := &http.Client{}
	defer client.CloseIdleConnections()
	warmUp(t, fake, client, base, llmTimeout+slack)

	for _, tc := range []struct {
		name  string
		reply llmtest.ChatReply
		// onFirstDelta runs once the visitor saw the first piece of the answer.
		onFirstDelta func()
		down         bool // the provider is gone: its server closed
		want         string
		// hangs: the model never finishes, so LLM_TIMEOUT must end the call, and the
		// fake must see it cancelled.
		hangs bool
	}{
		{name: "fails mid-stream after text", reply: llmtest.ChatReply{Text: []string{"We do ", "accessibility "}, FailMidStream: true}, want: wantError},
		{name: "fails mid-stream before text", reply: llmtest.ChatReply{FailMidStream: true}, want: wantRetrieval},
		{name: "connection dropped mid-stream", reply: llmtest.ChatReply{Text: []string{"We do "}, Hang: true},
			onFirstDelta: fake.CloseClientConnections, want: wantError},
		{name: "hangs after text", reply: llmtest.ChatReply{Text: []string{"Let me ", "think "}, Hang: true}, want: wantError, hangs: true},
		{name: "hangs before text", reply: llmtest.ChatReply{Hang: true}, want: wantRetrieval, hangs: true},
		{name: "answers 503", reply: llmtest.ChatReply{Status: http.StatusServiceUnavailable}, want: wantRetrieval},
		// Last: it closes the fake for good.
		{name: "down (connection refused)", down: true, want: wantRetrieval},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake.SetFallback(func(int, llmtest.ChatRequest) llmtest.ChatReply { return tc.reply })
			if tc.down {
				fake.Close()
			}
			cancelled := fake.Cancellations()
			// The client's own deadline: a stream still open at it is a hung connection.
			ctx, cancel := context.WithTimeout(context.Background(), llmTimeout+slack)
			defer cancel()
			began := time.Now()
			s, err := openChat(ctx, client, base, "Do you do accessibility audits, and what do they cost?")
			if err != nil {
				t.Fatal(err)
			}
			defer s.close()
			events := readStream(t, ctx, s, began, llmTimeout, &tc.onFirstDelta)
			took := time.Since(began)
			t.Logf("ended after %v: %v", took.Round(time.Millisecond), names(events))
			if len(events) == 0 {
				t.Fatal("no events")
			}
			for _, e := range events[:len(events)-1] {
				if e.Name == "error" || e.Name == "message.done" {
					t.Fatalf("%s before the end of the stream: %v", e.Name, names(events))
				}
			}
			checkEnding(t, tc.want, events, tc.reply.Text)
			if tc.hangs {
				if took < llmTimeout {
					t.Errorf("ended after %v, before LLM_TIMEOUT %v: the model did not hang as scripted", took, llmTimeout)
				}
				// The provider call was cancelled, not left running.
				if !testkit.Eventually(5*time.Second, func() bool { return fake.Cancellations() > cancelled }) {
					t.Error("the hanging provider call was never cancelled")
				}
			} else if took > slack {
				t.Errorf("ended after %v; a failing (not hanging) model should end the turn within %v", took, slack)
			}
		})
	}
}

// warmUp runs one turn the model answers: the faults below then meet a service whose
// pools, caches and first search are behind it, as a replica's are after its first
// visitor, not a cold start that a loaded machine can slow past LLM_TIMEOUT.
func warmUp(t *testing.T, fake *llmtest.ChatServer, client *http.Client, base string, within time.Duration) {
	t.Helper()
	fake.SetFallback(func(int, llmtest.ChatRequest) llmtest.ChatReply { return llmtest.ChatReply{Text: []string{"Yes."}} })
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	s, err := openChat(ctx, client, base, "Do you do accessibility audits?")
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	var none func()
	events := readStream(t, ctx, s, time.Now(), within, &none)
	if len(events) == 0 || events[len(events)-1].Name != "message.done" {
		t.Fatalf("warm-up turn: %v, want it to end with message.done", names(events))
	}
}

// How a chat turn whose model failed must end.
const (
	wantError     = "error"     // an error event, after the text the visitor saw
	wantRetrieval = "retrieval" // a retrieval-only answer, when nothing was shown yet
)

// readStream reads a chat stream to its end, failing on a stream still open at ctx's
// deadline or one that breaks; once the first delta arrived it runs *onFirstDelta once.
func readStream(t *testing.T, ctx context.Context, s *chatStream, began time.Time, llmTimeout time.Duration, onFirstDelta *func()) []sseEvent {
	t.Helper()
	var events []sseEvent
	for {
		ev, err := s.next()
		if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			t.Fatalf("the stream was still open %v after the request (LLM_TIMEOUT %v); events so far %v", time.Since(began).Round(time.Millisecond), llmTimeout, names(events))
		}
		if errors.Is(err, io.EOF) {
			return events
		}
		if err != nil {
			t.Fatalf("stream broke instead of ending: %v; events so far %v", err, names(events))
		}
		events = append(events, ev)
		if ev.Name == "message.delta" && *onFirstDelta != nil {
			(*onFirstDelta)()
			*onFirstDelta = nil
		}
	}
}

// checkEnding checks the last event against want: the error after the model's text, or
// the retrieval-only answer with links and sources.
func checkEnding(t *testing.T, want string, events []sseEvent, modelText []string) {
	t.Helper()
	last := events[len(events)-1]
	switch want {
	case wantError:
		var e struct{ Code, Message string }
		if last.Name != "error" || json.Unmarshal(last.Data, &e) != nil || e.Code != "unavailable" || e.Message == "" {
			t.Fatalf("last event %s %s, want error with code unavailable; events %v", last.Name, last.Data, names(events))
		}
		if got := text(events); got != strings.Join(modelText, "") {
			t.Errorf("text before the error %q, want what the model sent, %q", got, strings.Join(modelText, ""))
		}
	case wantRetrieval:
		var d struct{ Mode, Reason string }
		if last.Name != "message.done" || json.Unmarshal(last.Data, &d) != nil || d.Mode != "retrieval" || d.Reason != "llm_unavailable" {
			t.Fatalf("last event %s %s, want message.done mode retrieval, reason llm_unavailable; events %v", last.Name, last.Data, names(events))
		}
		if answer := text(events); !strings.Contains(answer, "](https://site.example/") {
			t.Errorf("the retrieval-only answer has no links to the site's pages: %q", answer)
		}
		var sources struct{ Items []json.RawMessage }
		for _, e := range events {
			if e.Name == "sources" {
				_ = json.Unmarshal(e.Data, &sources)
			}
		}
		if len(sources.Items) == 0 {
			t.Error("no sources with the retrieval-only answer")
		}
	}
}
