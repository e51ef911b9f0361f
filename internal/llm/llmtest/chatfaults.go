package llmtest

import (
	"strings"
	"time"

	"github.com/sitetools/sitetools/internal/llm"
)

// chatFaults are a ChatServer's knobs for what a failing provider does, read when a
// request arrives.
type chatFaults struct {
	tokensPerWord int // 0: llm.CountTokens
	delay         time.Duration
	status        int
	retryAfter    time.Duration
	reset         bool
}

// ReceivedTokens is the number of prompt tokens of every chat request received, counted
// when it arrived, before any delay or failure: failed, reset and cancelled requests
// included, as a provider bills what it received. A request's prompt tokens are 3, plus
// 4 and its content's tokens for each message.
func (s *ChatServer) ReceivedTokens() int { return int(s.receivedTokens.Load()) }

// SetTokensPerWord makes the server count n tokens per whitespace-separated word of each
// message's content from now on (0: the local count, llm.CountTokens), in ReceivedTokens
// and in the prompt tokens of the usage it reports.
func (s *ChatServer) SetTokensPerWord(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.tokensPerWord = n
}

// SetDelay makes every request wait d before anything is written, or until the client
// gives up, which Cancellations counts; a reply's own FirstDelay is waited after it.
func (s *ChatServer) SetDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.delay = d
}

// SetFail makes every request fail with status, in OpenAI's error shape, until
// SetFail(0). A failed request takes no scripted reply.
func (s *ChatServer) SetFail(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.status = status
}

// SetRetryAfter makes failures with 429 or 503 carry Retry-After (in whole seconds,
// rounded up) and OpenAI's retry-after-ms (exact), as OpenAI does. Zero removes them.
func (s *ChatServer) SetRetryAfter(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.retryAfter = d
}

// SetReset makes the server read every request and then close its connection without
// an answer (a TCP reset), until SetReset(false). The request is counted and recorded
// but takes no scripted reply.
func (s *ChatServer) SetReset(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.reset = on
}

// arrive records req as it arrives: it counts the request and its prompt tokens, and
// returns its number (from 1), the knobs in force and, unless those fail it, the reply
// it takes from the script or the fallback.
func (s *ChatServer) arrive(req ChatRequest) (n int, reply ChatReply, f chatFaults, prompt int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.received++
	n, f = s.received, s.faults
	if !s.forget {
		s.requests = append(s.requests, req)
	}
	prompt = promptTokens(req, f.tokensPerWord)
	s.receivedTokens.Add(int64(prompt))
	if f.reset || f.status != 0 {
		return n, ChatReply{}, f, prompt
	}
	switch {
	case len(s.script) > 0:
		reply, s.script = s.script[0], s.script[1:]
	case s.fallback != nil:
		reply = s.fallback(n, req)
	default:
		reply = Say("Fake answer.")
	}
	return n, reply, f, prompt
}

// promptTokens counts a request's prompt as OpenAI's chat format does roughly: 3, plus
// 4 and the content's tokens for each message; perWord > 0 counts that many tokens per
// whitespace-separated word of the content instead of llm.CountTokens.
func promptTokens(req ChatRequest, perWord int) int {
	n := 3
	for _, m := range req.Messages {
		if perWord > 0 {
			n += 4 + perWord*len(strings.Fields(m.Content))
		} else {
			n += 4 + llm.CountTokens(m.Content)
		}
	}
	return n
}
