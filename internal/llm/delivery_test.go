package llm_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sitetools/sitetools/internal/llm"
)

// provider is an OpenAI-compatible server for the delivery tests whose every answer a
// test decides: handle gets the request's number (1-based) and its inputs (embeddings)
// or messages (chat).
type provider struct {
	*httptest.Server
	calls atomic.Int64
}

func newProvider(t *testing.T, handle func(n int, w http.ResponseWriter, r *http.Request, inputs []string)) *provider {
	t.Helper()
	p := &provider{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(p.calls.Add(1))
		var body struct {
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		handle(n, w, r, body.Input)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *provider) Calls() int { return int(p.calls.Load()) }

func (p *provider) BaseURL() string { return p.URL + "/v1" }

// answerEmbeddings answers one two-dimensional vector per input.
func answerEmbeddings(w http.ResponseWriter, inputs []string) {
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	data := make([]item, len(inputs))
	for i := range inputs {
		data[i] = item{Object: "embedding", Index: i, Embedding: []float32{1, float32(i)}}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": "m",
		"usage": map[string]int{"prompt_tokens": len(inputs), "total_tokens": len(inputs)}})
}

// answerStatus answers status in OpenAI's error shape, with Retry-After-Ms when
// retryAfter is set.
func answerStatus(w http.ResponseWriter, status int, retryAfter time.Duration) {
	if retryAfter > 0 {
		w.Header().Set("Retry-After-Ms", strconv.FormatInt(retryAfter.Milliseconds(), 10))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"message":"failed","type":"server_error","code":null}}`)
}

// chunk is one chat completion chunk carrying text.
func chunk(text string) string {
	b, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion.chunk",
		"choices": []any{map[string]any{"index": 0, "delta": map[string]string{"content": text}}}})
	return "data: " + string(b) + "\n\n"
}

// answerChat streams text as one chunk and ends the stream.
func answerChat(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, chunk(text)+"data: [DONE]\n\n")
}

// hijack takes the connection of a request whose body was read.
func hijack(t *testing.T, w http.ResponseWriter) (net.Conn, *bufio.ReadWriter) {
	conn, rw, err := w.(http.Hijacker).Hijack()
	if err != nil {
		t.Error(err)
		panic(http.ErrAbortHandler)
	}
	return conn, rw
}

// resetAfterRead closes the connection of a request it has read with a TCP reset.
func resetAfterRead(t *testing.T, w http.ResponseWriter) {
	conn, _ := hijack(t, w)
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = conn.Close()
}

// cutStream starts a 200 chat stream, sends one chunk and closes the connection before
// the stream's end.
func cutStream(t *testing.T, w http.ResponseWriter) {
	conn, rw := hijack(t, w)
	defer conn.Close()
	c := chunk("Hel")
	fmt.Fprintf(rw, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", len(c), c)
	_ = rw.Flush()
}

func embedder(t *testing.T, baseURL string, opts llm.OpenAIOptions) *llm.OpenAI {
	t.Helper()
	opts.BaseURL, opts.Model = baseURL, "m"
	opts.BaseBackoff, opts.MaxBackoff = time.Millisecond, 2*time.Millisecond
	o, err := llm.NewOpenAI(opts)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func chatter(t *testing.T, baseURL string, retries int) *llm.Chat {
	t.Helper()
	c, err := llm.NewChat(llm.ChatOptions{BaseURL: baseURL, Model: "m", MaxRetries: retries})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func chatOnce(ctx context.Context, c *llm.Chat, onDelta func(string) error) error {
	_, err := c.Stream(ctx, llm.ChatRequest{Messages: []llm.ChatMessage{{Role: "user", Content: "Hi"}}}, onDelta)
	return err
}

func noDelta(string) error { return nil }

// counts is a Delivery's four numbers.
type counts struct{ sent, unknown, refused, answered int }

func checkDelivery(t *testing.T, d *llm.Delivery, want counts) {
	t.Helper()
	got := counts{d.Sent(), d.Unknown(), d.Refused(), d.Answered()}
	if got != want {
		t.Errorf("delivery %+v, want %+v", got, want)
	}
	if got.sent != got.unknown+got.refused+got.answered {
		t.Errorf("delivery %+v: sent is not the sum of the outcomes", got)
	}
	if n := len(d.UnknownEstimates()); n != got.unknown {
		t.Errorf("%d estimates for %d requests of unknown delivery", n, got.unknown)
	}
}

// closedURL is the base URL of a server that is no longer listening.
func closedURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/v1"
}

// silentURL is the https base URL of a listener that accepts connections and never
// answers: the TLS handshake never ends.
func silentURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return "https://" + ln.Addr().String() + "/v1"
}

// TestDeliveryEmbeddings: what became of each request, observed on real connections.
func TestDeliveryEmbeddings(t *testing.T) {
	for _, tc := range []struct {
		name   string
		handle func(t *testing.T) func(int, http.ResponseWriter, *http.Request, []string)
		url    func(t *testing.T) string // instead of the provider
		opts   llm.OpenAIOptions
		in     int // inputs; 1 if 0
		want   counts
		calls  int
	}{
		{name: "success", in: 5, opts: llm.OpenAIOptions{BatchSize: 2}, want: counts{3, 0, 0, 3}, calls: 3,
			handle: func(*testing.T) func(int, http.ResponseWriter, *http.Request, []string) {
				return func(_ int, w http.ResponseWriter, _ *http.Request, in []string) { answerEmbeddings(w, in) }
			}},
		{name: "refused connection", url: closedURL, opts: llm.OpenAIOptions{MaxRetries: 2}, want: counts{}},
		{name: "TLS handshake that never ends", url: silentURL,
			opts: llm.OpenAIOptions{MaxRetries: -1, Timeout: 100 * time.Millisecond}, want: counts{}},
		{name: "DNS failure", url: func(*testing.T) string { return "http://provider.invalid/v1" },
			opts: llm.OpenAIOptions{MaxRetries: -1, Timeout: 2 * time.Second}, want: counts{}},
		{name: "timeout after the write", opts: llm.OpenAIOptions{MaxRetries: -1, Timeout: 100 * time.Millisecond},
			want: counts{1, 1, 0, 0}, calls: 1,
			handle: func(*testing.T) func(int, http.ResponseWriter, *http.Request, []string) {
				return func(_ int, _ http.ResponseWriter, r *http.Request, _ []string) { <-r.Context().Done() }
			}},
		{name: "503 storm", opts: llm.OpenAIOptions{MaxRetries: 3}, want: counts{4, 4, 0, 0}, calls: 4,
			handle: status(503)},
		{name: "400", want: counts{1, 0, 1, 0}, calls: 1, handle: status(400)},
		{name: "429", opts: llm.OpenAIOptions{MaxRetries: -1}, want: counts{1, 0, 1, 0}, calls: 1, handle: status(429)},
		{name: "429 retried", opts: llm.OpenAIOptions{MaxRetries: 2}, want: counts{3, 0, 3, 0}, calls: 3, handle: status(429)},
		{name: "reset after the request was read", opts: llm.OpenAIOptions{MaxRetries: 1}, want: counts{2, 2, 0, 0}, calls: 2,
			handle: func(t *testing.T) func(int, http.ResponseWriter, *http.Request, []string) {
				return func(_ int, w http.ResponseWriter, _ *http.Request, _ []string) { resetAfterRead(t, w) }
			}},
		{name: "503 then success", opts: llm.OpenAIOptions{MaxRetries: 1}, want: counts{2, 1, 0, 1}, calls: 2,
			handle: func(*testing.T) func(int, http.ResponseWriter, *http.Request, []string) {
				return func(n int, w http.ResponseWriter, _ *http.Request, in []string) {
					if n == 1 {
						answerStatus(w, 503, 0)
						return
					}
					answerEmbeddings(w, in)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p *provider
			url := ""
			if tc.url != nil {
				url = tc.url(t)
			} else {
				p = newProvider(t, tc.handle(t))
				url = p.BaseURL()
			}
			ctx, d := llm.Track(context.Background())
			_, err := embedder(t, url, tc.opts).Embed(ctx, texts(max(tc.in, 1)))
			if (err == nil) != (tc.want.answered > 0) {
				t.Errorf("err %v", err)
			}
			checkDelivery(t, d, tc.want)
			if p != nil && p.Calls() != tc.calls {
				t.Errorf("the provider saw %d requests, want %d", p.Calls(), tc.calls)
			}
		})
	}
}

func status(code int) func(*testing.T) func(int, http.ResponseWriter, *http.Request, []string) {
	return func(*testing.T) func(int, http.ResponseWriter, *http.Request, []string) {
		return func(_ int, w http.ResponseWriter, _ *http.Request, _ []string) { answerStatus(w, code, 0) }
	}
}

// TestDeliveryChat: the chat client counts the request that opened a stream when the
// stream ends: answered when read to its end, unknown when it broke or the caller
// stopped it.
func TestDeliveryChat(t *testing.T) {
	for _, tc := range []struct {
		name   string
		handle func(t *testing.T) func(int, http.ResponseWriter, *http.Request, []string)
		url    func(t *testing.T) string
		stop   bool // the caller cancels after the first delta
		want   counts
	}{
		{name: "success", want: counts{1, 0, 0, 1},
			handle: func(*testing.T) func(int, http.ResponseWriter, *http.Request, []string) {
				return func(_ int, w http.ResponseWriter, _ *http.Request, _ []string) { answerChat(w, "Hello") }
			}},
		{name: "refused connection", url: closedURL, want: counts{}},
		{name: "stream cut mid-way", want: counts{1, 1, 0, 0},
			handle: func(t *testing.T) func(int, http.ResponseWriter, *http.Request, []string) {
				return func(_ int, w http.ResponseWriter, _ *http.Request, _ []string) { cutStream(t, w) }
			}},
		{name: "cancelled after the first delta", stop: true, want: counts{1, 1, 0, 0},
			handle: func(*testing.T) func(int, http.ResponseWriter, *http.Request, []string) {
				return func(_ int, w http.ResponseWriter, r *http.Request, _ []string) {
					w.Header().Set("Content-Type", "text/event-stream")
					fmt.Fprint(w, chunk("Hel"))
					w.(http.Flusher).Flush()
					<-r.Context().Done()
				}
			}},
		{name: "503 then 400", want: counts{2, 1, 1, 0},
			handle: func(*testing.T) func(int, http.ResponseWriter, *http.Request, []string) {
				return func(n int, w http.ResponseWriter, _ *http.Request, _ []string) {
					answerStatus(w, map[int]int{1: 503, 2: 400}[n], 0)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := ""
			if tc.url != nil {
				url = tc.url(t)
			} else {
				url = newProvider(t, tc.handle(t)).BaseURL()
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ctx, d := llm.Track(ctx)
			err := chatOnce(ctx, chatter(t, url, 1), func(string) error {
				if tc.stop {
					cancel()
				}
				return nil
			})
			if (err == nil) != (tc.want.answered > 0) {
				t.Errorf("err %v", err)
			}
			checkDelivery(t, d, tc.want)
		})
	}
}

// An enclosing Track counts the requests of the calls under an inner one; untracked
// calls count nowhere, and a nil Delivery reads 0.
func TestDeliveryNesting(t *testing.T) {
	p := newProvider(t, func(_ int, w http.ResponseWriter, _ *http.Request, in []string) { answerEmbeddings(w, in) })
	o := embedder(t, p.BaseURL(), llm.OpenAIOptions{})
	outer, total := llm.Track(context.Background())
	for range 2 {
		inner, d := llm.Track(outer)
		if _, err := o.Embed(inner, []string{"a"}); err != nil {
			t.Fatal(err)
		}
		checkDelivery(t, d, counts{1, 0, 0, 1})
	}
	if _, err := o.Embed(context.Background(), []string{"a"}); err != nil {
		t.Fatal(err)
	}
	checkDelivery(t, total, counts{2, 0, 0, 2})
	var none *llm.Delivery
	checkDelivery(t, none, counts{})
}

// A request cancelled by its caller before it was written is not sent; one cancelled
// after is unknown.
func TestDeliveryCallerCancel(t *testing.T) {
	arrived := make(chan struct{})
	p := newProvider(t, func(_ int, _ http.ResponseWriter, r *http.Request, _ []string) {
		close(arrived)
		<-r.Context().Done()
	})
	o := embedder(t, p.BaseURL(), llm.OpenAIOptions{})

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tracked, d := llm.Track(ctx)
	if _, err := o.Embed(tracked, []string{"a"}); !errors.Is(err, context.Canceled) {
		t.Errorf("err %v", err)
	}
	checkDelivery(t, d, counts{})

	ctx, cancel = context.WithCancel(context.Background())
	go func() {
		<-arrived
		cancel()
	}()
	tracked, d = llm.Track(ctx)
	_, err := o.Embed(tracked, []string{"a"})
	if !errors.Is(err, context.Canceled) || llm.ProviderFailure(err) {
		t.Errorf("err %v", err)
	}
	checkDelivery(t, d, counts{1, 1, 0, 0})
}

// estimate is CountTokens over in.
func estimate(in []string) int {
	n := 0
	for _, s := range in {
		n += llm.CountTokens(s)
	}
	return n
}

// TestDeliveryTokens: a Delivery holds what the provider reported for the answered
// embeddings requests and an estimate of the inputs of each one whose delivery is
// unknown, whatever became of the call: a batch that ran out of time is estimated whole
// and its halves at what they reported, each retry sent has an estimate of its own, an
// answer without usage is counted, a refusal adds nothing.
func TestDeliveryTokens(t *testing.T) {
	in := texts(4)
	for _, tc := range []struct {
		name      string
		opts      llm.OpenAIOptions
		handle    func(t *testing.T) func(int, http.ResponseWriter, *http.Request, []string)
		ok        bool
		answered  int
		estimates []int
	}{
		{name: "split after a timeout", ok: true, answered: 4, estimates: []int{estimate(in)},
			opts: llm.OpenAIOptions{BatchSize: 4, Timeout: 100 * time.Millisecond, MaxRetries: -1},
			handle: func(*testing.T) func(int, http.ResponseWriter, *http.Request, []string) {
				return func(n int, w http.ResponseWriter, r *http.Request, in []string) {
					if n == 1 {
						<-r.Context().Done()
						return
					}
					answerEmbeddings(w, in) // usage: a token an input
				}
			}},
		{name: "reset after the read, retried", estimates: []int{estimate(in), estimate(in)},
			opts: llm.OpenAIOptions{MaxRetries: 1},
			handle: func(t *testing.T) func(int, http.ResponseWriter, *http.Request, []string) {
				return func(_ int, w http.ResponseWriter, _ *http.Request, _ []string) { resetAfterRead(t, w) }
			}},
		{name: "second half 503", answered: 2, estimates: []int{estimate(in[2:])},
			opts: llm.OpenAIOptions{BatchSize: 2, MaxRetries: -1},
			handle: func(*testing.T) func(int, http.ResponseWriter, *http.Request, []string) {
				return func(n int, w http.ResponseWriter, _ *http.Request, in []string) {
					if n == 2 {
						answerStatus(w, 503, 0)
						return
					}
					answerEmbeddings(w, in)
				}
			}},
		{name: "no usage reported", ok: true, answered: estimate(in),
			handle: func(*testing.T) func(int, http.ResponseWriter, *http.Request, []string) {
				return func(_ int, w http.ResponseWriter, _ *http.Request, in []string) {
					data := make([]map[string]any, len(in))
					for i := range in {
						data[i] = map[string]any{"object": "embedding", "index": i, "embedding": []float32{1, 0}}
					}
					w.Header().Set("Content-Type", "application/json")
					_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": "m"})
				}
			}},
		{name: "refused", handle: status(400)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProvider(t, tc.handle(t))
			outer, total := llm.Track(context.Background())
			ctx, d := llm.Track(outer)
			_, err := embedder(t, p.BaseURL(), tc.opts).Embed(ctx, in)
			if (err == nil) != tc.ok {
				t.Errorf("err %v", err)
			}
			for name, d := range map[string]*llm.Delivery{"inner": d, "outer": total} {
				if got := d.AnsweredTokens(); got != tc.answered {
					t.Errorf("%s: answered tokens %d, want %d", name, got, tc.answered)
				}
				if diff := cmp.Diff(tc.estimates, d.UnknownEstimates()); diff != "" {
					t.Errorf("%s: estimates of the requests of unknown delivery (-want +got):\n%s", name, diff)
				}
			}
		})
	}
	// A chat request of unknown delivery has an estimate of 0.
	p := newProvider(t, func(_ int, w http.ResponseWriter, _ *http.Request, _ []string) { cutStream(t, w) })
	ctx, d := llm.Track(context.Background())
	if err := chatOnce(ctx, chatter(t, p.BaseURL(), -1), noDelta); err == nil {
		t.Fatal("a cut stream succeeded")
	}
	if diff := cmp.Diff([]int{0}, d.UnknownEstimates()); diff != "" || d.AnsweredTokens() != 0 {
		t.Errorf("chat: estimates (-want +got):\n%s, answered tokens %d", diff, d.AnsweredTokens())
	}
}
