package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// attemptHook is the function of WithAttemptHook.
type attemptHook func(ctx context.Context, attempt int) error

type attemptHookKey struct{}

// WithAttemptHook returns ctx carrying hook, which the OpenAI embeddings client and the
// Chat client call before every request of a call beyond the ones it set out to make:
// each retry of a request, and each request that sends again the inputs of a batch that
// ran out of time and was split. attempt is how often the request's inputs will have
// been sent with this one, so at least 2: 2 for a first retry, 3 for the next; for the
// halves of a split batch, one more than the batch they come from was sent.
//
// A retry's hook runs once the client has decided to retry, before it waits for the
// backoff or the provider's Retry-After, so that a refusal costs no wait; a retry the
// hook admitted is not sent after all when ctx ends during that wait (a Delivery tells).
// If hook returns an error, no further request is sent and the call fails with an error
// that wraps it (errors.Is and errors.As find it); ProviderFailure is false for it.
// The cost guard reserves budget for each extra request here, or refuses it.
func WithAttemptHook(ctx context.Context, hook func(ctx context.Context, attempt int) error) context.Context {
	return context.WithValue(ctx, attemptHookKey{}, attemptHook(hook))
}

// attemptRefused is the error of a call whose attempt hook refused a request.
type attemptRefused struct {
	err     error // the hook's
	attempt int
	last    error // why the request before failed; nil if not known
}

func (e *attemptRefused) Error() string {
	s := fmt.Sprintf("attempt %d not made: %v", e.attempt, e.err)
	if e.last != nil {
		s += " (the attempt before: " + e.last.Error() + ")"
	}
	return s
}

func (e *attemptRefused) Unwrap() error { return e.err }

// retryAfterError is a call's error with the Retry-After of the provider's last 429 or
// 503 answer in the call.
type retryAfterError struct {
	err   error
	after time.Duration
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

// RetryAfter returns the wait the provider asked for (Retry-After or retry-after-ms,
// capped at a minute) on the last answer of status 429 or 503 in the call that failed
// with err, whatever the call failed of in the end; 0 if that answer named none, or the
// call had no such answer, or err is not an error of OpenAI.Embed or Chat.Stream.
func RetryAfter(err error) time.Duration {
	var ra *retryAfterError
	if errors.As(err, &ra) {
		return ra.after
	}
	return 0
}

// ProviderFailure reports whether err, from OpenAI.Embed or Chat.Stream, says that the
// provider is down or overloaded: the failures a circuit breaker counts. These are
// timeouts (context.DeadlineExceeded, of an attempt or of the whole call), failures to
// connect or to read the answer (connection refused or reset, EOF, DNS), a 5xx or a 429
// answer, and a chat stream that broke or carried an error. It is false for nil, for the
// caller's own cancellation (context.Canceled), for other 4xx answers, for errors of the
// attempt hook, and for any other error (an answer that does not fit the request, an
// error returned by the caller's onDelta).
func ProviderFailure(err error) bool {
	if err == nil {
		return false
	}
	var refusedAttempt *attemptRefused
	if errors.As(err, &refusedAttempt) {
		return false
	}
	var se *StatusError
	if errors.As(err, &se) {
		return se.StatusCode == http.StatusTooManyRequests || se.StatusCode >= http.StatusInternalServerError
	}
	switch {
	case errors.Is(err, context.Canceled):
		return false
	case errors.Is(err, context.DeadlineExceeded), isTransportFailure(err):
		return true
	}
	// What remains of ErrUnavailable is a stream that broke or carried an error.
	return errors.Is(err, ErrUnavailable)
}
