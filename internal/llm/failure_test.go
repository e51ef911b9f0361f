package llm_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sitetools/sitetools/internal/llm"
)

var errNoBudget = errors.New("no budget left")

// hookLog records the attempts a hook was asked for; it refuses from refuseAt on (0:
// never).
type hookLog struct {
	mu       sync.Mutex
	attempts []int
	refuseAt int
}

func (h *hookLog) hook(_ context.Context, attempt int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.attempts = append(h.attempts, attempt)
	if h.refuseAt > 0 && len(h.attempts) >= h.refuseAt {
		return fmt.Errorf("reserving attempt %d: %w", attempt, errNoBudget)
	}
	return nil
}

func (h *hookLog) got() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.attempts
}

// TestAttemptHookEmbeddings: the hook is asked before each retry and each request that
// resends the inputs of a split batch, with how often those inputs will have been sent;
// a refusal sends nothing more and is the call's error.
func TestAttemptHookEmbeddings(t *testing.T) {
	storm := func(_ int, w http.ResponseWriter, _ *http.Request, _ []string) { answerStatus(w, 503, 0) }
	// A proxy's 504 for every request of several inputs: the batch is split down to one.
	tooSlow := func(_ int, w http.ResponseWriter, _ *http.Request, in []string) {
		if len(in) > 1 {
			answerStatus(w, 504, 0)
			return
		}
		answerEmbeddings(w, in)
	}
	for _, tc := range []struct {
		name     string
		handle   func(int, http.ResponseWriter, *http.Request, []string)
		in       int
		refuseAt int // 0: admit all
		want     []int
		calls    int
		delivery counts
	}{
		{name: "retries", handle: storm, in: 1, want: []int{2, 3, 4}, calls: 4, delivery: counts{4, 4, 0, 0}},
		{name: "retry refused", handle: storm, in: 1, refuseAt: 1, want: []int{2}, calls: 1, delivery: counts{1, 1, 0, 0}},
		{name: "second retry refused", handle: storm, in: 1, refuseAt: 2, want: []int{2, 3}, calls: 2, delivery: counts{2, 2, 0, 0}},
		// 4 inputs: [0,4) 504, [0,2) 504, then one at a time: [0], [1] sent the third
		// time, [2], [3] the second.
		{name: "split batch", handle: tooSlow, in: 4, want: []int{2, 3, 3, 2, 2}, calls: 6, delivery: counts{6, 2, 0, 4}},
		{name: "split refused", handle: tooSlow, in: 4, refuseAt: 1, want: []int{2}, calls: 1, delivery: counts{1, 1, 0, 0}},
		{name: "no extra request", handle: func(_ int, w http.ResponseWriter, _ *http.Request, in []string) {
			answerEmbeddings(w, in)
		}, in: 5, want: nil, calls: 2, delivery: counts{2, 0, 0, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProvider(t, tc.handle)
			o := embedder(t, p.BaseURL(), llm.OpenAIOptions{BatchSize: min(tc.in, 4), MaxRetries: 3})
			h := &hookLog{refuseAt: tc.refuseAt}
			ctx, d := llm.Track(llm.WithAttemptHook(context.Background(), h.hook))
			_, err := o.Embed(ctx, texts(tc.in))
			if diff := cmp.Diff(tc.want, h.got()); diff != "" {
				t.Errorf("attempts asked for (-want +got):\n%s", diff)
			}
			if p.Calls() != tc.calls {
				t.Errorf("the provider saw %d requests, want %d", p.Calls(), tc.calls)
			}
			checkDelivery(t, d, tc.delivery)
			if tc.refuseAt > 0 && (!errors.Is(err, errNoBudget) || llm.ProviderFailure(err)) {
				t.Errorf("err %v: want it to wrap the hook's error, and no provider failure", err)
			}
		})
	}
}

// TestAttemptHookChat: the chat client asks before each retry of opening the stream.
func TestAttemptHookChat(t *testing.T) {
	for _, tc := range []struct {
		name     string
		refuseAt int
		want     []int
		calls    int
	}{
		{name: "admitted", want: []int{2}, calls: 2},
		{name: "refused", refuseAt: 1, want: []int{2}, calls: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProvider(t, func(n int, w http.ResponseWriter, _ *http.Request, _ []string) {
				if n == 1 {
					answerStatus(w, 429, 5*time.Millisecond)
					return
				}
				answerChat(w, "ok")
			})
			h := &hookLog{refuseAt: tc.refuseAt}
			err := chatOnce(llm.WithAttemptHook(context.Background(), h.hook), chatter(t, p.BaseURL(), 1), noDelta)
			if diff := cmp.Diff(tc.want, h.got()); diff != "" {
				t.Errorf("attempts asked for (-want +got):\n%s", diff)
			}
			if p.Calls() != tc.calls {
				t.Errorf("the provider saw %d requests, want %d", p.Calls(), tc.calls)
			}
			if (err != nil) != (tc.refuseAt > 0) || tc.refuseAt > 0 && (!errors.Is(err, errNoBudget) || llm.ProviderFailure(err)) {
				t.Errorf("err %v", err)
			}
			if tc.refuseAt > 0 && llm.RetryAfter(err) != 5*time.Millisecond {
				t.Errorf("RetryAfter(%v) = %s, want the 429's 5ms", err, llm.RetryAfter(err))
			}
		})
	}
}

// TestRetryAfterOnErrors: a call's error carries the Retry-After of its last 429 or 503,
// capped at a minute, and still is the StatusError and ErrUnavailable it was.
func TestRetryAfterOnErrors(t *testing.T) {
	type answer struct {
		status int
		after  time.Duration
	}
	for _, tc := range []struct {
		name       string
		answers    []answer // the last repeats
		retries    int
		deadline   time.Duration
		want       time.Duration
		wantStatus int
	}{
		{name: "429", answers: []answer{{429, 7 * time.Second}}, retries: -1, want: 7 * time.Second, wantStatus: 429},
		{name: "503 then 500", answers: []answer{{503, 30 * time.Millisecond}, {500, 0}}, retries: 1,
			want: 30 * time.Millisecond, wantStatus: 500},
		{name: "the last 429 named none", answers: []answer{{429, 20 * time.Millisecond}, {429, 0}}, retries: 1, want: 0, wantStatus: 429},
		{name: "capped", answers: []answer{{503, 3 * time.Hour}}, retries: -1, want: time.Minute, wantStatus: 503},
		{name: "beyond the deadline", answers: []answer{{429, 30 * time.Second}}, retries: 3, deadline: 5 * time.Second,
			want: 30 * time.Second, wantStatus: 429},
		{name: "500 names none", answers: []answer{{500, 0}}, retries: -1, want: 0, wantStatus: 500},
		{name: "a 429 then a refusal", answers: []answer{{429, 10 * time.Millisecond}, {400, 0}}, retries: 1,
			want: 10 * time.Millisecond, wantStatus: 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			handle := func(n int, w http.ResponseWriter, _ *http.Request, _ []string) {
				a := tc.answers[min(n, len(tc.answers))-1]
				answerStatus(w, a.status, a.after)
			}
			ctx, cancel := context.WithTimeout(context.Background(), cmpOr(tc.deadline, time.Minute))
			defer cancel()
			_, embedErr := embedder(t, newProvider(t, handle).BaseURL(), llm.OpenAIOptions{MaxRetries: tc.retries}).
				Embed(ctx, []string{"a"})
			chatErr := chatOnce(ctx, chatter(t, newProvider(t, handle).BaseURL(), tc.retries), noDelta)
			for _, err := range []error{embedErr, chatErr} {
				if got := llm.RetryAfter(err); got != tc.want {
					t.Errorf("RetryAfter(%v) = %s, want %s", err, got, tc.want)
				}
				var se *llm.StatusError
				if !errors.As(err, &se) || se.StatusCode != tc.wantStatus {
					t.Errorf("err %v, want a StatusError %d", err, tc.wantStatus)
				}
				if tc.wantStatus >= 429 && !errors.Is(err, llm.ErrUnavailable) {
					t.Errorf("err %v, want ErrUnavailable", err)
				}
			}
		})
	}
	if got := llm.RetryAfter(nil); got != 0 {
		t.Errorf("RetryAfter(nil) = %s", got)
	}
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func TestProviderFailure(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"other", errors.New("provider returned 3 embeddings for 2 inputs"), false},
		{"cancelled", fmt.Errorf("llm.Chat.Stream: %w", context.Canceled), false},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), true},
		{"unavailable deadline", fmt.Errorf("%w: deadline reached: %w", llm.ErrUnavailable, context.DeadlineExceeded), true},
		{"500", &llm.StatusError{StatusCode: 500}, true},
		{"503 unavailable", fmt.Errorf("%w: giving up: %w", llm.ErrUnavailable, &llm.StatusError{StatusCode: 503}), true},
		{"429", &llm.StatusError{StatusCode: 429}, true},
		{"400", &llm.StatusError{StatusCode: 400}, false},
		{"401", &llm.StatusError{StatusCode: 401}, false},
		{"408 after retries", fmt.Errorf("%w: giving up: %w", llm.ErrUnavailable, &llm.StatusError{StatusCode: 408}), false},
		{"refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{"EOF", fmt.Errorf("post: %w", io.EOF), true},
		{"DNS", &net.DNSError{Err: "no such host", Name: "provider.invalid", IsNotFound: true}, true},
		{"broken stream", fmt.Errorf("%w: the provider sent a chunk that is not JSON", llm.ErrUnavailable), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := llm.ProviderFailure(tc.err); got != tc.want {
				t.Errorf("ProviderFailure(%v) = %t, want %t", tc.err, got, tc.want)
			}
		})
	}
}

// TestProviderFailureOfCalls: ProviderFailure on the errors that real calls return.
func TestProviderFailureOfCalls(t *testing.T) {
	cut := newProvider(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []string) { cutStream(t, w) })
	if err := chatOnce(context.Background(), chatter(t, cut.BaseURL(), -1), noDelta); !llm.ProviderFailure(err) {
		t.Errorf("a stream cut mid-way: ProviderFailure(%v) = false", err)
	}
	reset := newProvider(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []string) { resetAfterRead(t, w) })
	if _, err := embedder(t, reset.BaseURL(), llm.OpenAIOptions{MaxRetries: -1}).Embed(context.Background(), []string{"a"}); !llm.ProviderFailure(err) {
		t.Errorf("a connection reset: ProviderFailure(%v) = false", err)
	}
	if _, err := embedder(t, closedURL(t), llm.OpenAIOptions{MaxRetries: -1}).Embed(context.Background(), []string{"a"}); !llm.ProviderFailure(err) {
		t.Errorf("a connection refused: ProviderFailure(%v) = false", err)
	}
	slow := newProvider(t, func(_ int, _ http.ResponseWriter, r *http.Request, _ []string) { <-r.Context().Done() })
	_, err := embedder(t, slow.BaseURL(), llm.OpenAIOptions{MaxRetries: -1, Timeout: 50 * time.Millisecond}).Embed(context.Background(), []string{"a"})
	if !llm.ProviderFailure(err) {
		t.Errorf("a timeout: ProviderFailure(%v) = false", err)
	}
	refused := newProvider(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []string) { answerStatus(w, 400, 0) })
	if _, err := embedder(t, refused.BaseURL(), llm.OpenAIOptions{}).Embed(context.Background(), []string{"a"}); err == nil || llm.ProviderFailure(err) {
		t.Errorf("a 400: ProviderFailure(%v) = true", err)
	}
	stopped := errors.New("the client went away")
	ok := newProvider(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []string) { answerChat(w, "Hello") })
	if err := chatOnce(context.Background(), chatter(t, ok.BaseURL(), -1), func(string) error { return stopped }); !errors.Is(err, stopped) || llm.ProviderFailure(err) {
		t.Errorf("onDelta's error: ProviderFailure(%v) = true", err)
	}
}
