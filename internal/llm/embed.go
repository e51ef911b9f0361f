// Package llm holds the clients for language-model providers (OpenAI-compatible
// embeddings) and the built-in offline lexical embedder.
package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
)

// Embedder turns texts into vectors. Search embeds queries with it, ingestion chunks.
type Embedder interface {
	// Model names what produced the vectors, e.g. "local-lexical-v1" or the provider's
	// model name. An index built by one model must not be searched with another.
	Model() string
	// Dimensions is the length of every vector Embed returns.
	Dimensions() int
	// Embed returns one vector per text, in the order of texts.
	Embed(ctx context.Context, texts []string) (*Embeddings, error)
}

// Embeddings is the answer to one Embed call.
type Embeddings struct {
	Vectors [][]float32
	// Tokens is the provider-reported usage (prompt tokens), or the estimate where the
	// provider reports none or the embedder is local.
	Tokens int
	// Requests is how many requests the provider received or may have received for the
	// call: retries and split batches included. An in-process embedder counts one.
	Requests int
	// Counted is set when Tokens is CountTokens over the texts, not a provider's report.
	Counted bool
}

// ErrUnavailable marks a failure of the provider rather than of the request: a timeout,
// a connection failure, a 5xx, or a 429 that outlasted the retries. Callers degrade
// (e.g. search falls back to full-text) instead of failing.
var ErrUnavailable = errors.New("embedding provider unavailable")

// StatusError is an HTTP error answered by a provider. Errors end up in logs, so its
// Message is the provider's explanation only where it quotes nothing that was sent.
type StatusError struct {
	StatusCode int
	Type       string // the provider's error type, e.g. "invalid_request_error", if it sent one
	Code       string // the provider's error code, e.g. "model_not_found", if it sent one
	Message    string // the provider's message, on one line and bounded; "" when withheld
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("provider answered %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	switch {
	case e.Type != "" && e.Code != "":
		s += fmt.Sprintf(" (%s, %s)", e.Type, e.Code)
	case e.Type != "" || e.Code != "":
		s += fmt.Sprintf(" (%s%s)", e.Type, e.Code)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// IsUnavailable reports whether err means the provider is down, overloaded or too slow,
// so that the caller should degrade rather than fail. A caller's own cancellation is not
// unavailability; a request the provider rejects (4xx other than 429) is not either.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrUnavailable) {
		return true
	}
	if errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var se *StatusError
	if errors.As(err, &se) {
		return retryableStatus(se.StatusCode)
	}
	return isTransportFailure(err)
}

func retryableStatus(code int) bool {
	return code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500
}

// isTransportFailure reports whether err is a failure to reach the provider or to read
// its answer, as opposed to a local misconfiguration.
func isTransportFailure(err error) bool {
	var opErr *net.OpError
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case errors.As(err, &opErr), errors.As(err, &dnsErr):
		return true
	case errors.As(err, &netErr) && netErr.Timeout():
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET):
		return true
	}
	return false
}
