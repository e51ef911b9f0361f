package llmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sitetools/sitetools/internal/llm"
)

// ReceivedTokens is the number of prompt tokens of every request received, counted when
// it arrived, before any delay or failure: failed, reset and abandoned requests
// included, as a provider bills what it received.
func (s *Server) ReceivedTokens() int { return int(s.received.Load()) }

// SetTokensPerWord makes the server count n tokens per whitespace-separated word of each
// input from now on, as a provider whose tokenizer differs from the local one; 0 goes
// back to the local count (llm.CountTokens). The count is what answers report as usage
// and what ReceivedTokens and Tokens add up.
func (s *Server) SetTokensPerWord(n int) {
	s.locked(func() { s.tokensPerWord = n })
}

// SetReset makes the server read every request and then close its connection without
// an answer (a TCP reset), until SetReset(false). The request is counted.
func (s *Server) SetReset(on bool) {
	s.locked(func() { s.reset = on })
}

// arrivalKey is the context key of the prompt tokens a request was counted on arrival.
type arrivalKey struct{}

// cpuKey marks a request whose work ran on the simulated CPU, which counted it computed.
type cpuKey struct{}

func workedOnCPU(ctx context.Context) bool { on, _ := ctx.Value(cpuKey{}).(bool); return on }

// arrivalTokens returns the prompt tokens gate counted for a request.
func arrivalTokens(ctx context.Context) int {
	n, _ := ctx.Value(arrivalKey{}).(int)
	return n
}

// gate counts every request and applies the authentication, delay and failure knobs
// before the endpoint sees it. An embeddings request's prompt tokens are counted on
// arrival, once, and the endpoint reports that count.
func (s *Server) gate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// WaitComputing waits for the request from before it is counted anywhere.
		s.working.Add(1)
		defer s.working.Done()
		s.calls.Add(1)
		inputs := 0
		if r.URL.Path == "/v1/embeddings" {
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
			if err != nil {
				writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", nil, "Request body too large.")
				return
			}
			var texts []string
			inputs, texts = parseInputs(body)
			s.mu.Lock()
			tokens := countTokens(texts, s.tokensPerWord)
			s.requests = append(s.requests, inputs)
			s.mu.Unlock()
			s.received.Add(int64(tokens))
			r = r.WithContext(context.WithValue(r.Context(), arrivalKey{}, tokens))
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		s.mu.Lock()
		delay, apiKey, retryAfter, reset := s.delay, s.apiKey, s.retryAfter, s.reset
		perInput, requestCap, keep := s.perInput, s.requestCap, s.keepComputing
		status := s.failStatus
		if status == 0 && s.failFirst > 0 {
			s.failFirst--
			status = s.failFirstStatus
		}
		s.mu.Unlock()

		if !wait(r.Context(), delay) {
			return
		}
		if reset {
			resetConnection(w)
			return
		}
		if perInput > 0 && r.URL.Path == "/v1/embeddings" {
			if !s.work(w, r, time.Duration(inputs)*perInput, requestCap, arrivalTokens(r.Context()), keep) {
				return
			}
			r = r.WithContext(context.WithValue(r.Context(), cpuKey{}, true))
		}
		if apiKey != "" && r.Header.Get("Authorization") != "Bearer "+apiKey {
			writeError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "Incorrect API key provided.")
			return
		}
		if status != 0 {
			writeFailure(w, status, retryAfter)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// wait waits d, or until ctx is done (the client went away); it reports whether d passed.
func wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// writeFailure answers status in OpenAI's error shape; a 429 or 503 carries Retry-After
// (whole seconds, rounded up) and OpenAI's retry-after-ms when retryAfter is set.
func writeFailure(w http.ResponseWriter, status int, retryAfter time.Duration) {
	if retryAfter > 0 && (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(retryAfter.Seconds()))))
		w.Header().Set("Retry-After-Ms", strconv.FormatInt(retryAfter.Milliseconds(), 10))
	}
	typ, code := "server_error", any(nil)
	if status == http.StatusTooManyRequests {
		typ, code = "requests", "rate_limit_exceeded"
	}
	writeError(w, status, typ, code, http.StatusText(status))
}

// resetConnection closes the request's connection without writing a byte, with a TCP
// reset where it can (no lingering), as a provider or a proxy that drops a request does.
func resetConnection(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler) // the server closes the connection
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = conn.Close()
}

// countTokens counts texts as the server does: perWord tokens per whitespace-separated
// word, or llm.CountTokens when perWord is 0.
func countTokens(texts []string, perWord int) int {
	n := 0
	for _, t := range texts {
		if perWord > 0 {
			n += perWord * len(strings.Fields(t))
		} else {
			n += llm.CountTokens(t)
		}
	}
	return n
}

// parseInputs returns the number of inputs of an embeddings request body (0 if it has
// none) and their texts when they are strings.
func parseInputs(body []byte) (int, []string) {
	var req struct {
		Input json.RawMessage `json:"input"`
	}
	if json.Unmarshal(body, &req) != nil {
		return 0, nil
	}
	var one string
	if json.Unmarshal(req.Input, &one) == nil {
		return 1, []string{one}
	}
	var many []json.RawMessage
	if json.Unmarshal(req.Input, &many) != nil {
		return 0, nil
	}
	var texts []string
	for _, m := range many {
		if json.Unmarshal(m, &one) == nil {
			texts = append(texts, one)
		}
	}
	return len(many), texts
}
