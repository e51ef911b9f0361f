package llm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/llm/llmtest"
)

// newOpenAI returns a client of srv with backoffs short enough for tests; set fields of
// opts override.
func newOpenAI(t *testing.T, srv *llmtest.Server, opts llm.OpenAIOptions) *llm.OpenAI {
	t.Helper()
	if opts.BaseURL == "" {
		opts.BaseURL = srv.BaseURL()
	}
	if opts.Model == "" {
		opts.Model = "text-embedding-3-small"
	}
	if opts.BaseBackoff == 0 {
		opts.BaseBackoff = time.Millisecond
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = 5 * time.Millisecond
	}
	o, err := llm.NewOpenAI(opts)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func texts(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("chunk %d of the demo site about topic %d", i, i*31%97)
	}
	return out
}

func localEmbeddings(t *testing.T, dims int, in []string) *llm.Embeddings {
	t.Helper()
	l, err := llm.NewLocal(dims)
	if err != nil {
		t.Fatal(err)
	}
	e, err := l.Embed(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	e.Counted = false // as a provider's answer: its usage reported
	return e
}

func TestNewOpenAIValidates(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts llm.OpenAIOptions
	}{
		{"no model", llm.OpenAIOptions{BaseURL: "http://localhost:11434/v1"}},
		{"no scheme", llm.OpenAIOptions{Model: "m", BaseURL: "localhost:11434/v1"}},
		{"other scheme", llm.OpenAIOptions{Model: "m", BaseURL: "ftp://example.com/v1"}},
		{"negative dimensions", llm.OpenAIOptions{Model: "m", Dimensions: -1}},
		{"negative timeout", llm.OpenAIOptions{Model: "m", Timeout: -time.Second}},
		{"batch too large", llm.OpenAIOptions{Model: "m", BatchSize: 2049}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := llm.NewOpenAI(tc.opts); err == nil {
				t.Errorf("NewOpenAI(%+v): no error", tc.opts)
			}
		})
	}
}

func TestOpenAIEmbed(t *testing.T) {
	srv := llmtest.NewServer(t, 32)
	o := newOpenAI(t, srv, llm.OpenAIOptions{})
	in := []string{"What is your day rate?", "Datenschutzerklärung", "pgvector hybrid search"}
	got, err := o.Embed(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	want := localEmbeddings(t, 32, in)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("embeddings (-want +got):\n%s", diff)
	}
	if got.Tokens != srv.Tokens() || got.Tokens == 0 {
		t.Errorf("reported %d tokens, the provider billed %d", got.Tokens, srv.Tokens())
	}
	if o.Model() != "text-embedding-3-small" || o.Dimensions() != 32 {
		t.Errorf("model %q dimensions %d", o.Model(), o.Dimensions())
	}
}

func TestOpenAIBatching(t *testing.T) {
	for _, tc := range []struct {
		n, batchSize int
		want         []int // inputs per request
	}{
		{n: 300, want: []int{128, 128, 44}},
		{n: 128, want: []int{128}},
		{n: 129, want: []int{128, 1}},
		{n: 5, batchSize: 2, want: []int{2, 2, 1}},
		{n: 0, want: nil},
	} {
		t.Run("", func(t *testing.T) {
			srv := llmtest.NewServer(t, 32)
			o := newOpenAI(t, srv, llm.OpenAIOptions{BatchSize: tc.batchSize})
			in := texts(tc.n)
			got, err := o.Embed(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, srv.Requests()); diff != "" {
				t.Errorf("inputs per request (-want +got):\n%s", diff)
			}
			if srv.Calls() != len(tc.want) {
				t.Errorf("%d calls, want %d", srv.Calls(), len(tc.want))
			}
			want := localEmbeddings(t, 32, in)
			if diff := cmp.Diff(want.Vectors, got.Vectors); diff != "" {
				t.Errorf("vectors not one per text in order (-want +got):\n%s", diff)
			}
			if got.Tokens != srv.Tokens() || got.Tokens != want.Tokens {
				t.Errorf("tokens %d, provider billed %d, local count %d", got.Tokens, srv.Tokens(), want.Tokens)
			}
		})
	}
}

func TestOpenAIRetries(t *testing.T) {
	for _, tc := range []struct {
		name       string
		setup      func(*llmtest.Server)
		opts       llm.OpenAIOptions
		wantCalls  int
		wantErr    bool
		wantUnavl  bool
		wantStatus int           // of a StatusError, if any
		minElapsed time.Duration // a Retry-After honoured
		maxElapsed time.Duration
	}{
		{
			name:      "500 then success",
			setup:     func(s *llmtest.Server) { s.SetFailFirst(1, 500) },
			wantCalls: 2,
		},
		{
			name:      "502 and 503 then success",
			setup:     func(s *llmtest.Server) { s.SetFailFirst(2, 502) },
			wantCalls: 3,
		},
		{
			// retry-after-ms (60ms) wins over the whole-second Retry-After (1s)
			name:       "429 honours Retry-After",
			setup:      func(s *llmtest.Server) { s.SetFailFirst(1, 429); s.SetRetryAfter(60 * time.Millisecond) },
			wantCalls:  2,
			minElapsed: 60 * time.Millisecond,
			maxElapsed: 900 * time.Millisecond,
		},
		{
			name:      "gives up on 500 after MaxRetries",
			setup:     func(s *llmtest.Server) { s.SetFail(500) },
			opts:      llm.OpenAIOptions{MaxRetries: 2},
			wantCalls: 3, wantErr: true, wantUnavl: true, wantStatus: 500,
		},
		{
			name:      "gives up on 429 after the default retries",
			setup:     func(s *llmtest.Server) { s.SetFail(429) },
			wantCalls: 4, wantErr: true, wantUnavl: true, wantStatus: 429,
		},
		{
			name:      "no retries",
			setup:     func(s *llmtest.Server) { s.SetFail(503) },
			opts:      llm.OpenAIOptions{MaxRetries: -1},
			wantCalls: 1, wantErr: true, wantUnavl: true, wantStatus: 503,
		},
		{
			name:      "400 is not retried",
			setup:     func(s *llmtest.Server) { s.SetFail(400) },
			wantCalls: 1, wantErr: true, wantStatus: 400,
		},
		{
			name:      "wrong API key is not retried",
			setup:     func(s *llmtest.Server) { s.SetAPIKey("sk-right") },
			opts:      llm.OpenAIOptions{APIKey: "sk-wrong"},
			wantCalls: 1, wantErr: true, wantStatus: 401,
		},
		{
			name:      "right API key",
			setup:     func(s *llmtest.Server) { s.SetAPIKey("sk-right") },
			opts:      llm.OpenAIOptions{APIKey: "sk-right"},
			wantCalls: 1,
		},
		{
			// the provider asks for more time than the caller has: give up at once
			name:      "Retry-After beyond the deadline",
			setup:     func(s *llmtest.Server) { s.SetFail(429); s.SetRetryAfter(30 * time.Second) },
			wantCalls: 1, wantErr: true, wantUnavl: true, wantStatus: 429,
			maxElapsed: time.Second,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, 32)
			tc.setup(srv)
			o := newOpenAI(t, srv, tc.opts)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			start := time.Now()
			got, err := o.Embed(ctx, []string{"one", "two"})
			elapsed := time.Since(start)

			if srv.Calls() != tc.wantCalls {
				t.Errorf("%d calls, want %d", srv.Calls(), tc.wantCalls)
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error: %t", err, tc.wantErr)
			}
			if llm.IsUnavailable(err) != tc.wantUnavl {
				t.Errorf("IsUnavailable(%v) = %t, want %t", err, !tc.wantUnavl, tc.wantUnavl)
			}
			var se *llm.StatusError
			if tc.wantStatus != 0 && (!errors.As(err, &se) || se.StatusCode != tc.wantStatus) {
				t.Errorf("err = %v, want a StatusError %d", err, tc.wantStatus)
			}
			if elapsed < tc.minElapsed || (tc.maxElapsed > 0 && elapsed > tc.maxElapsed) {
				t.Errorf("took %s, want between %s and %s", elapsed, tc.minElapsed, tc.maxElapsed)
			}
			if err == nil && (len(got.Vectors) != 2 || got.Tokens != srv.Tokens()) {
				t.Errorf("got %d vectors and %d tokens, want 2 and %d", len(got.Vectors), got.Tokens, srv.Tokens())
			}
		})
	}
}

func TestOpenAITimeouts(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opts      llm.OpenAIOptions
		deadline  time.Duration
		wantCalls int
	}{
		{
			// each attempt times out; the retries run out well before the deadline
			name:      "per attempt",
			opts:      llm.OpenAIOptions{Timeout: 50 * time.Millisecond, MaxRetries: 2},
			deadline:  5 * time.Second,
			wantCalls: 3,
		},
		{
			// the caller's deadline cuts the first attempt short
			name:      "caller deadline",
			opts:      llm.OpenAIOptions{Timeout: 10 * time.Second},
			deadline:  100 * time.Millisecond,
			wantCalls: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, 32)
			srv.SetDelay(time.Minute)
			o := newOpenAI(t, srv, tc.opts)
			ctx, cancel := context.WithTimeout(context.Background(), tc.deadline)
			defer cancel()
			start := time.Now()
			_, err := o.Embed(ctx, []string{"slow"})
			elapsed := time.Since(start)
			if !llm.IsUnavailable(err) || !errors.Is(err, llm.ErrUnavailable) {
				t.Errorf("err = %v, want unavailable", err)
			}
			// no attempt may outlive the deadline; a second of slack for a loaded machine
			if budget := min(tc.deadline, time.Duration(tc.wantCalls)*tc.opts.Timeout) + time.Second; elapsed > budget {
				t.Errorf("returned after %s, want within %s", elapsed, budget)
			}
			if srv.Calls() != tc.wantCalls {
				t.Errorf("%d calls, want %d", srv.Calls(), tc.wantCalls)
			}
		})
	}
}

func TestOpenAICanceledIsNotUnavailable(t *testing.T) {
	srv := llmtest.NewServer(t, 32)
	o := newOpenAI(t, srv, llm.OpenAIOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := o.Embed(ctx, []string{"x"})
	if !errors.Is(err, context.Canceled) || llm.IsUnavailable(err) {
		t.Errorf("err = %v (unavailable: %t), want context.Canceled and not unavailable", err, llm.IsUnavailable(err))
	}
}

func TestOpenAIConnectionRefused(t *testing.T) {
	srv := llmtest.NewServer(t, 32)
	base := srv.BaseURL()
	srv.Close()
	o := newOpenAI(t, srv, llm.OpenAIOptions{BaseURL: base, MaxRetries: 1})
	_, err := o.Embed(context.Background(), []string{"x"})
	if !llm.IsUnavailable(err) {
		t.Errorf("err = %v, want unavailable", err)
	}
}

func TestOpenAIDimensions(t *testing.T) {
	for _, tc := range []struct {
		name           string
		dims           int
		ignore         bool // the model does not support the dimensions parameter
		wantDims       int  // of the vectors, 0 for an error
		wantDimsBefore int
	}{
		{name: "provider default", dims: 0, wantDims: 32, wantDimsBefore: 0},
		{name: "sent when set", dims: 64, wantDims: 64, wantDimsBefore: 64},
		{name: "mismatch", dims: 64, ignore: true, wantDimsBefore: 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, 32)
			srv.SetIgnoreDimensions(tc.ignore)
			o := newOpenAI(t, srv, llm.OpenAIOptions{Dimensions: tc.dims})
			if o.Dimensions() != tc.wantDimsBefore {
				t.Errorf("Dimensions() before a call = %d, want %d", o.Dimensions(), tc.wantDimsBefore)
			}
			got, err := o.Embed(context.Background(), []string{"a", "b"})
			if tc.wantDims == 0 {
				if err == nil || llm.IsUnavailable(err) || !strings.Contains(err.Error(), "returned 32-dimensional vectors, but 64 dimensions are configured") {
					t.Errorf("err = %v, want a clear dimension mismatch that is not unavailability", err)
				}
				if srv.Calls() != 1 {
					t.Errorf("%d calls, want 1: a mismatch is not retried", srv.Calls())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range got.Vectors {
				if len(v) != tc.wantDims {
					t.Errorf("vector of %d dimensions, want %d", len(v), tc.wantDims)
				}
			}
			if o.Dimensions() != tc.wantDims {
				t.Errorf("Dimensions() = %d, want %d", o.Dimensions(), tc.wantDims)
			}
		})
	}
}

func TestOpenAIUsage(t *testing.T) {
	for _, tc := range []struct {
		name       string
		omitUsage  bool
		wantBilled bool
	}{
		{name: "reported", wantBilled: true},
		{name: "not reported: counted locally", omitUsage: true, wantBilled: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, 32)
			srv.SetOmitUsage(tc.omitUsage)
			in := []string{"How do I merge rankings from full-text search and embedding similarity?", "Impressum"}
			got, err := newOpenAI(t, srv, llm.OpenAIOptions{}).Embed(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			want := llm.CountTokens(in[0]) + llm.CountTokens(in[1])
			if got.Tokens != want || got.Tokens != srv.Tokens() {
				t.Errorf("tokens %d, want %d (provider counted %d)", got.Tokens, want, srv.Tokens())
			}
		})
	}
}

// A provider may echo the input in its error message; neither the error nor the log
// may carry it on.
func TestOpenAIKeepsInputOutOfErrorsAndLogs(t *testing.T) {
	const secret = "my secret medical question"
	for _, status := range []int{400, 500} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var buf bytes.Buffer
				_, _ = buf.ReadFrom(r.Body)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				fmt.Fprintf(w, `{"error":{"message":"bad input: %s","type":"invalid_request_error","code":"bad"}}`,
					strings.ReplaceAll(buf.String(), `"`, `'`))
			}))
			defer echo.Close()
			var logs bytes.Buffer
			o, err := llm.NewOpenAI(llm.OpenAIOptions{
				BaseURL: echo.URL + "/v1", Model: "m", MaxRetries: 1, BaseBackoff: time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(&logs, nil)),
			})
			if err != nil {
				t.Fatal(err)
			}
			_, err = o.Embed(context.Background(), []string{secret})
			if err == nil {
				t.Fatal("no error")
			}
			if strings.Contains(err.Error(), "secret") || strings.Contains(logs.String(), "secret") {
				t.Errorf("input leaked:\nerror: %v\nlogs: %s", err, logs.String())
			}
			if !strings.Contains(err.Error(), fmt.Sprint(status)) || !strings.Contains(err.Error(), "invalid_request_error") {
				t.Errorf("error %q should still name the status and the provider's error type", err)
			}
			if status == 500 && !strings.Contains(logs.String(), "attempt=1") {
				t.Errorf("the retry was not logged: %s", logs.String())
			}
		})
	}
}

func TestIsUnavailable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{err: nil, want: false},
		{err: errors.New("something"), want: false},
		{err: fmt.Errorf("wrapped: %w", llm.ErrUnavailable), want: true},
		{err: context.DeadlineExceeded, want: true},
		{err: fmt.Errorf("x: %w", context.Canceled), want: false},
		{err: &llm.StatusError{StatusCode: 503}, want: true},
		{err: &llm.StatusError{StatusCode: 429}, want: true},
		{err: &llm.StatusError{StatusCode: 404}, want: false},
	} {
		t.Run("", func(t *testing.T) {
			if got := llm.IsUnavailable(tc.err); got != tc.want {
				t.Errorf("IsUnavailable(%v) = %t, want %t", tc.err, got, tc.want)
			}
		})
	}
}

// TestOpenAIHalvesBatchesThatRunOutOfTime: against a server on a CPU (one request at a
// time, a cost per input), a batch that runs out of time — a proxy's 504 or the client's
// own deadline — is sent again in halves, never whole, down to what finishes, and later
// calls keep the smaller size; every vector arrives, in order.
func TestOpenAIHalvesBatchesThatRunOutOfTime(t *testing.T) {
	for _, tc := range []struct {
		name        string
		perInput    time.Duration
		requestCap  time.Duration // the proxy's 504
		timeout     time.Duration // the client's attempt deadline
		want, later []int
	}{
		{name: "proxy 504", perInput: 10 * time.Millisecond, requestCap: 250 * time.Millisecond, timeout: 10 * time.Second,
			want: []int{64, 32, 16, 16, 16, 16}, later: []int{16, 4}},
		{name: "own deadline", perInput: 10 * time.Millisecond, timeout: 250 * time.Millisecond,
			want: []int{64, 32, 16, 16, 16, 16}, later: []int{16, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t, 32)
			srv.SetCPU(tc.perInput, tc.requestCap)
			o := newOpenAI(t, srv, llm.OpenAIOptions{BatchSize: 64, Timeout: tc.timeout})
			in := texts(64)
			got, err := o.Embed(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, srv.Requests()); diff != "" {
				t.Errorf("inputs per request (-want +got):\n%s", diff)
			}
			if got.Requests != len(tc.want) {
				t.Errorf("Requests = %d, want %d", got.Requests, len(tc.want))
			}
			if diff := cmp.Diff(localEmbeddings(t, 32, in).Vectors, got.Vectors); diff != "" {
				t.Errorf("vectors not one per text in order (-want +got):\n%s", diff)
			}
			if o.BatchSize() != 16 {
				t.Errorf("batch size %d after the splits, want 16", o.BatchSize())
			}
			if _, err := o.Embed(context.Background(), texts(20)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.later, srv.Requests()[len(tc.want):]); diff != "" {
				t.Errorf("a later call's requests (-want +got):\n%s", diff)
			}
		})
	}
}

// TestOpenAIProviderMessage: a provider's explanation of a refusal reaches the error, on
// one line and without control characters, unless it quotes the input.
func TestOpenAIProviderMessage(t *testing.T) {
	message := "the input length exceeds the context length\x1b[31m\n\tof 2048 tokens"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		quoted, _ := json.Marshal(message)
		fmt.Fprintf(w, `{"error":{"message":%s,"type":"invalid_request_error","code":null}}`, quoted)
	}))
	defer srv.Close()
	o, err := llm.NewOpenAI(llm.OpenAIOptions{BaseURL: srv.URL + "/v1", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = o.Embed(context.Background(), []string{"a page about accessibility audits"})
	want := "provider answered 400 Bad Request (invalid_request_error): the input length exceeds the context length [31m of 2048 tokens"
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("error = %v\nwant it to end in %q", err, want)
	}
}
