package llm

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"sync/atomic"
	"time"
)

// attemptInfo is what the HTTP layer saw of one request, which go-openai does not pass
// on: the status of the answer, the provider's Retry-After, and whether the request was
// written to a connection. The retry loops put a new one in the context of every
// attempt; attemptDoer fills it.
type attemptInfo struct {
	status int           // the answer's status code; 0 when none arrived
	after  time.Duration // the provider's Retry-After on a retryable status; 0 when none
	// observe asks attemptDoer to watch the request being written (a Delivery is
	// tracked); without it written stays false and nothing is traced.
	observe bool
	// written is set once the transport has written the request's headers to a
	// connection. It is set from the transport's goroutines.
	written atomic.Bool
	// inputs are the texts of an embeddings request, for a Delivery's estimate of a
	// request whose delivery is unknown; tokens is what the provider reported for an
	// answered one. The embeddings client sets both.
	inputs []string
	tokens int
}

type attemptKey struct{}

// withAttempt returns ctx carrying a.
func withAttempt(ctx context.Context, a *attemptInfo) context.Context {
	return context.WithValue(ctx, attemptKey{}, a)
}

// sent reports whether the provider may have received the request: it was written to a
// connection, or an answer arrived (a transport that does not report writing).
func (a *attemptInfo) sent() bool { return a.status != 0 || a.written.Load() }

// attemptDoer is the HTTP client of the go-openai clients: it fills the attemptInfo of
// the request's context.
type attemptDoer struct{ client *http.Client }

// Do sends req, noting in its attemptInfo whether it was written, the status of the
// answer and the provider's Retry-After.
func (d attemptDoer) Do(req *http.Request) (*http.Response, error) {
	info, _ := req.Context().Value(attemptKey{}).(*attemptInfo)
	if info == nil {
		info = new(attemptInfo)
	}
	if info.observe {
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			WroteHeaders: func() { info.written.Store(true) },
		}))
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return resp, err
	}
	info.status = resp.StatusCode
	if !retryableStatus(resp.StatusCode) {
		return resp, nil
	}
	info.after = retryAfter(resp.Header, time.Now())
	// Error bodies are small; a bounded read keeps a misbehaving server from making
	// go-openai buffer an unbounded one.
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.LimitReader(resp.Body, 64<<10), resp.Body}
	return resp, nil
}

// retryAfter reads how long a provider asks to wait: OpenAI's retry-after-ms first
// (finer than seconds), then the standard Retry-After in seconds or as an HTTP date.
// It returns 0 when there is no usable hint.
func retryAfter(h http.Header, now time.Time) time.Duration {
	seconds := math.NaN()
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil {
			seconds = ms / 1000
		}
	}
	if v := h.Get("Retry-After"); math.IsNaN(seconds) && v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil {
			seconds = s
		} else if t, err := http.ParseTime(v); err == nil {
			seconds = t.Sub(now).Seconds()
		}
	}
	if !(seconds > 0) { // also NaN
		return 0
	}
	// Compared as floats first: a huge value would overflow a Duration.
	if seconds >= maxRetryAfter.Seconds() {
		return maxRetryAfter
	}
	return time.Duration(seconds * float64(time.Second))
}
