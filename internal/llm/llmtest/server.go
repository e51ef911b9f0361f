// Package llmtest provides a fake OpenAI-compatible provider for tests: it speaks the
// real wire format, embeds with the local embedder so that results mean something, and
// counts what a real provider would bill.
package llmtest

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/llm"
)

// Server is a fake OpenAI-compatible provider. Its knobs may be turned while requests
// are in flight.
type Server struct {
	*httptest.Server

	dims int

	calls    atomic.Int64 // every request received, failed ones included
	received atomic.Int64 // prompt tokens of every request received, counted on arrival
	tokens   atomic.Int64 // prompt tokens of answered requests
	inputs   atomic.Int64 // inputs of answered requests
	computed atomic.Int64 // prompt tokens of requests whose work finished, answered or not

	mu               sync.Mutex
	embedders        map[int]*llm.Local // by dimension
	requests         []int
	delay            time.Duration
	failStatus       int
	failFirst        int
	failFirstStatus  int
	retryAfter       time.Duration
	reset            bool // close the connection without an answer
	tokensPerWord    int  // 0: llm.CountTokens
	ignoreDimensions bool
	omitUsage        bool
	apiKey           string
	perInput         time.Duration // CPU time one input takes; requests are served one at a time
	requestCap       time.Duration // a request whose work takes longer is answered 504 after it
	keepComputing    bool          // work runs to its end when nobody waits for it any more
	texts            []string      // every input received, in order, when recordTexts
	recordTexts      bool
	vectors          map[string][]float32 // fixed answers for inputs containing a key

	cpu     sync.Mutex     // held while a request's per-input work runs
	working sync.WaitGroup // requests being handled, and per-input work under way or waiting for the CPU
}

// NewServer starts a provider whose vectors have dims dimensions unless a request asks
// for others, and closes it when the test ends.
func NewServer(t testing.TB, dims int) *Server {
	t.Helper()
	s, err := StartServer(dims)
	if err != nil {
		t.Fatalf("llmtest.NewServer: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// StartServer starts a provider as NewServer does, outside a test (the bench); the
// caller closes it.
func StartServer(dims int) (*Server, error) {
	local, err := llm.NewLocal(dims)
	if err != nil {
		return nil, fmt.Errorf("llmtest.StartServer: %w", err)
	}
	s := &Server{dims: dims, embedders: map[int]*llm.Local{dims: local}}
	mux := http.NewServeMux()
	// POST /v1/chat/completions joins here when the chat needs a fake.
	mux.HandleFunc("POST /v1/embeddings", s.handleEmbeddings)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "invalid_request_error", "unknown_url",
			fmt.Sprintf("Unknown request URL: %s %s", r.Method, r.URL.Path))
	})
	s.Server = httptest.NewServer(s.gate(mux))
	return s, nil
}

// BaseURL is what a client takes as its API root, ending in /v1.
func (s *Server) BaseURL() string { return s.URL + "/v1" }

// Calls is the number of requests received, failed ones included.
func (s *Server) Calls() int { return int(s.calls.Load()) }

// Tokens is the number of prompt tokens of the requests answered successfully, as
// their usage reported them.
func (s *Server) Tokens() int { return int(s.tokens.Load()) }

// Inputs is the number of texts embedded by the requests answered successfully.
func (s *Server) Inputs() int { return int(s.inputs.Load()) }

// Requests lists, for every embeddings request received in order (failed ones
// included), the number of inputs it carried; never their text.
func (s *Server) Requests() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.requests...)
}

// SetDelay makes every request wait d before it is answered, or until the client gives up.
func (s *Server) SetDelay(d time.Duration) {
	s.locked(func() { s.delay = d })
}

// SetFail makes every request fail with status until SetFail(0).
func (s *Server) SetFail(status int) {
	s.locked(func() { s.failStatus = status })
}

// SetFailFirst makes the next n requests fail with status.
func (s *Server) SetFailFirst(n, status int) {
	s.locked(func() { s.failFirst, s.failFirstStatus = n, status })
}

// SetRetryAfter makes failures with 429 or 503 carry Retry-After (in whole seconds,
// rounded up) and OpenAI's retry-after-ms (exact), as OpenAI does. Zero removes them.
func (s *Server) SetRetryAfter(d time.Duration) {
	s.locked(func() { s.retryAfter = d })
}

// SetIgnoreDimensions makes the server answer with its own dimension whatever a request
// asks for, like a model that does not support the dimensions parameter.
func (s *Server) SetIgnoreDimensions(ignore bool) {
	s.locked(func() { s.ignoreDimensions = ignore })
}

// SetOmitUsage makes answers report no usage, as some local servers do.
func (s *Server) SetOmitUsage(omit bool) {
	s.locked(func() { s.omitUsage = omit })
}

// SetAPIKey makes the server require "Authorization: Bearer key"; empty requires nothing.
func (s *Server) SetAPIKey(key string) {
	s.locked(func() { s.apiKey = key })
}

// SetCPU makes the server behave like a model server on a CPU: requests are served one
// at a time, each input costs perInput, and a request whose work would take longer than
// requestCap (0: no cap), waiting included, is answered 504 once requestCap has passed, as
// a proxy in front of such a server answers.
func (s *Server) SetCPU(perInput, requestCap time.Duration) {
	s.locked(func() { s.perInput, s.requestCap = perInput, requestCap })
}

// SetKeepComputing makes the work of SetCPU run to its end when its client has gone
// away (its deadline passed, or a proxy answered 504), as Ollama's does: that work holds
// the CPU meanwhile, so the requests after it wait, and its tokens count in
// ComputedTokens. false (the default) stops such work at once.
func (s *Server) SetKeepComputing(on bool) {
	s.locked(func() { s.keepComputing = on })
}

// ComputedTokens is the number of prompt tokens of the embeddings requests whose work
// the server finished: the answered ones, and under SetKeepComputing those computed for
// a client that had gone away. Call WaitComputing first for a count that no work still
// running will change.
func (s *Server) ComputedTokens() int { return int(s.computed.Load()) }

// WaitComputing waits until every request received so far has been answered or given
// up, and no work of SetCPU runs or waits for the CPU. Call it once no more requests
// arrive, e.g. after the client's call returned.
func (s *Server) WaitComputing() { s.working.Wait() }

// RecordTexts makes the server keep every input it receives from now on, for tests that
// assert what a provider is sent (task prefixes).
func (s *Server) RecordTexts() {
	s.locked(func() { s.recordTexts = true })
}

// Texts returns the inputs received since RecordTexts, in order.
func (s *Server) Texts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.texts...)
}

// SetVector makes the server answer v (of its dimension) for every input that contains
// part, as a multilingual model maps a question and a passage in two languages close
// together.
func (s *Server) SetVector(part string, v []float32) {
	s.locked(func() {
		if s.vectors == nil {
			s.vectors = map[string][]float32{}
		}
		s.vectors[part] = v
	})
}

// work holds the server's one CPU for the time a request's inputs take, and counts the
// request's tokens (arrival's count) in ComputedTokens when that time has passed. It
// reports whether the request may be answered; if not it has written the proxy's 504, or
// the client went away. Work nobody waits for any more stops, as a model server's does
// when the proxy in front of it closes the connection, unless keep (SetKeepComputing).
func (s *Server) work(w http.ResponseWriter, r *http.Request, d, limit time.Duration, tokens int, keep bool) bool {
	var capped <-chan time.Time
	if limit > 0 {
		t := time.NewTimer(limit)
		defer t.Stop()
		capped = t.C
	}
	done, abandoned := make(chan struct{}), make(chan struct{})
	defer close(abandoned)
	s.working.Add(1) // within the request's own count, which gate holds
	go func() {
		defer s.working.Done()
		s.cpu.Lock()
		defer s.cpu.Unlock()
		t := time.NewTimer(d) // the simulated computation
		defer t.Stop()
		if !keep {
			select {
			case <-t.C:
			case <-abandoned:
				return
			}
		} else {
			<-t.C
		}
		s.computed.Add(int64(tokens))
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-capped:
		writeError(w, http.StatusGatewayTimeout, "server_error", nil, "upstream timed out")
		return false
	case <-r.Context().Done():
		return false
	}
}

type embeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	Dimensions     int             `json:"dimensions,omitempty"`
	EncodingFormat string          `json:"encoding_format,omitempty"`
	User           string          `json:"user,omitempty"`
}

type embeddingData struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"` // []float32, or a base64 string
}

type embeddingResponse struct {
	Object string          `json:"object"`
	Data   []embeddingData `json:"data"`
	Model  string          `json:"model"`
	Usage  *usage          `json:"usage,omitempty"`
}

type usage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// handleEmbeddings answers POST /v1/embeddings.
func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	var req embeddingRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", nil, "We could not parse the JSON body of your request.")
		return
	}
	var inputs []string
	var one string
	switch {
	case json.Unmarshal(req.Input, &one) == nil:
		inputs = []string{one}
	case json.Unmarshal(req.Input, &inputs) == nil:
	default:
		writeError(w, http.StatusBadRequest, "invalid_request_error", nil, "'input' must be a string or an array of strings.")
		return
	}
	switch {
	case req.Model == "":
		writeError(w, http.StatusBadRequest, "invalid_request_error", nil, "you must provide a model parameter")
		return
	case len(inputs) == 0 || len(inputs) > 2048:
		writeError(w, http.StatusBadRequest, "invalid_request_error", nil, "'input' must have between 1 and 2048 items.")
		return
	case req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64":
		writeError(w, http.StatusBadRequest, "invalid_request_error", nil, "'encoding_format' must be 'float' or 'base64'.")
		return
	}
	for _, in := range inputs {
		if in == "" {
			writeError(w, http.StatusBadRequest, "invalid_request_error", nil, "'input' cannot contain an empty string.")
			return
		}
	}
	s.mu.Lock()
	if s.recordTexts {
		s.texts = append(s.texts, inputs...)
	}
	fixed := s.vectors
	s.mu.Unlock()
	embedder, err := s.embedder(req.Dimensions)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", nil, err.Error())
		return
	}
	emb, err := embedder.Embed(r.Context(), inputs)
	if err != nil {
		return // the client went away
	}

	resp := embeddingResponse{Object: "list", Model: req.Model, Data: make([]embeddingData, len(inputs))}
	for i, v := range emb.Vectors {
		for part, f := range fixed {
			if strings.Contains(inputs[i], part) && len(f) == len(v) {
				v = f
			}
		}
		resp.Data[i] = embeddingData{Object: "embedding", Index: i, Embedding: v}
		if req.EncodingFormat == "base64" {
			resp.Data[i].Embedding = encodeBase64(v)
		}
	}
	s.mu.Lock()
	omitUsage := s.omitUsage
	s.mu.Unlock()
	tokens := arrivalTokens(r.Context())
	if !omitUsage {
		resp.Usage = &usage{PromptTokens: tokens, TotalTokens: tokens}
	}
	if !workedOnCPU(r.Context()) {
		s.computed.Add(int64(tokens))
	}
	s.tokens.Add(int64(tokens))
	s.inputs.Add(int64(len(inputs)))
	writeJSON(w, http.StatusOK, resp)
}

// maxBody bounds a request body, as a provider does.
const maxBody = 32 << 20

// locked runs f with the server's settings locked.
func (s *Server) locked(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}

// embedder returns the embedder for a requested dimension (0: the server's own).
func (s *Server) embedder(dims int) (*llm.Local, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if dims == 0 || s.ignoreDimensions {
		dims = s.dims
	}
	if e, ok := s.embedders[dims]; ok {
		return e, nil
	}
	e, err := llm.NewLocal(dims)
	if err != nil {
		return nil, fmt.Errorf("'dimensions' is not supported: %d", dims)
	}
	s.embedders[dims] = e
	return e, nil
}

// encodeBase64 is OpenAI's base64 format: the float32s little-endian, base64-encoded.
func encodeBase64(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// writeError writes OpenAI's error body; code is a string or nil, as OpenAI sends it.
func writeError(w http.ResponseWriter, status int, typ string, code any, message string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{
		"message": message, "type": typ, "param": nil, "code": code,
	}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
