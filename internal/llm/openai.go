package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"

	openai "github.com/sashabaranov/go-openai"
)

// OpenAIOptions configures an OpenAI-compatible embeddings client. Zero values mean
// the defaults given per field.
type OpenAIOptions struct {
	// BaseURL is the API root including its version, e.g. "http://localhost:11434/v1"
	// for Ollama. Default "https://api.openai.com/v1".
	BaseURL string
	// BaseURLSetting is how the configuration names BaseURL, e.g. "EMBEDDINGS_BASE_URL":
	// the error of a 404 under a base URL without /v1 says what to set it to.
	BaseURLSetting string
	// APIKey is sent as a bearer token; empty sends none (local servers).
	APIKey string
	// Model is the embedding model; required.
	Model string
	// Dimensions, when set, is sent as `dimensions` and every returned vector must have
	// that length. When zero, the provider's default length is taken from the first
	// answer and every later answer must match it.
	Dimensions int
	// Timeout bounds each attempt. Default 10s. The caller's context bounds the whole
	// call, retries and splits included. A request of several inputs that runs out of it
	// is split in halves rather than sent again (see Embed).
	Timeout time.Duration
	// MaxRetries is how often a request that failed with 429, 5xx, a timeout or a
	// connection failure is repeated. Default 3; negative means never.
	MaxRetries int
	// BatchSize is the most texts sent in one request; Embed splits larger inputs.
	// Default 128; it shrinks when a request of that size runs out of time.
	BatchSize int
	// BaseBackoff is the wait before the first retry, doubled for each further one,
	// with jitter, up to MaxBackoff. Defaults 250ms and 8s. A provider's Retry-After
	// takes precedence.
	BaseBackoff time.Duration
	MaxBackoff  time.Duration
	// HTTPClient sends the requests. Default: a client on a copy of
	// http.DefaultTransport that keeps up to 64 idle connections per provider.
	HTTPClient *http.Client
	// Logger receives a line per retry (status, attempt, wait; never input text).
	// Nil discards.
	Logger *slog.Logger
}

// The defaults of OpenAIOptions.
const (
	DefaultOpenAIBaseURL = "https://api.openai.com/v1"
	DefaultTimeout       = 10 * time.Second
	DefaultMaxRetries    = 3
	DefaultBatchSize     = 128
	defaultBaseBackoff   = 250 * time.Millisecond
	defaultMaxBackoff    = 8 * time.Second
	// maxRetryAfter caps a provider's Retry-After: beyond it, waiting is worse than
	// degrading.
	maxRetryAfter = time.Minute
	// maxBatchSize is OpenAI's limit of inputs per request.
	maxBatchSize = 2048
)

// OpenAI embeds through any OpenAI-compatible /v1/embeddings endpoint: OpenAI, Ollama,
// vLLM, llama.cpp server, TEI, LiteLLM. It is safe for concurrent use.
type OpenAI struct {
	client    *openai.Client
	model     string
	dims      int          // as configured; 0 means learned
	learned   atomic.Int64 // the provider's dimension, once seen, when dims is 0
	timeout   time.Duration
	retry     retryPolicy
	size      atomic.Int64 // inputs per request: BatchSize, less after a request of it ran out of time
	base, max time.Duration
	endpoint  endpoint
}

var _ Embedder = (*OpenAI)(nil)

// NewOpenAI returns a client for opts. It does not contact the provider.
func NewOpenAI(opts OpenAIOptions) (*OpenAI, error) {
	if opts.Model == "" {
		return nil, errors.New("llm.NewOpenAI: a model is required")
	}
	if opts.BaseURL == "" {
		opts.BaseURL = DefaultOpenAIBaseURL
	}
	u, err := url.Parse(opts.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("llm.NewOpenAI: base URL must be an absolute http(s) URL such as %q, got %q",
			DefaultOpenAIBaseURL, opts.BaseURL)
	}
	if opts.Dimensions < 0 {
		return nil, fmt.Errorf("llm.NewOpenAI: dimensions must not be negative, got %d", opts.Dimensions)
	}
	if opts.Timeout < 0 || opts.BaseBackoff < 0 || opts.MaxBackoff < 0 {
		return nil, errors.New("llm.NewOpenAI: durations must not be negative")
	}
	if opts.BatchSize < 0 || opts.BatchSize > maxBatchSize {
		return nil, fmt.Errorf("llm.NewOpenAI: batch size must be between 1 and %d, got %d", maxBatchSize, opts.BatchSize)
	}
	o := &OpenAI{
		model:    opts.Model,
		dims:     opts.Dimensions,
		timeout:  cmpOr(opts.Timeout, DefaultTimeout),
		base:     cmpOr(opts.BaseBackoff, defaultBaseBackoff),
		max:      cmpOr(opts.MaxBackoff, defaultMaxBackoff),
		client:   newClient(opts.APIKey, opts.BaseURL, opts.HTTPClient),
		endpoint: newEndpoint(u, opts.BaseURLSetting),
	}
	o.size.Store(int64(cmpOr(opts.BatchSize, DefaultBatchSize)))
	o.retry = retryPolicy{max: retries(opts.MaxRetries, DefaultMaxRetries), backoff: o.backoff,
		log: orDiscard(opts.Logger), what: "embedding request", model: opts.Model}
	return o, nil
}

// retries is the retry count of an option: 0 means def, a negative count none.
func retries(n, def int) int {
	switch {
	case n == 0:
		return def
	case n < 0:
		return 0
	}
	return n
}

// orDiscard is log, or a logger that discards everything.
func orDiscard(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}

// providerTransport is the default clients' transport: http.DefaultTransport's, but
// keeping up to providerIdleConns idle connections to a provider instead of two, so that
// concurrent chat streams to a provider over HTTP/1.1 (a local model server) reuse their
// connections instead of dialing one for most calls.
var providerTransport = func() http.RoundTripper {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return http.DefaultTransport
	}
	t = t.Clone()
	t.MaxIdleConnsPerHost = providerIdleConns
	return t
}()

const providerIdleConns = 64

// newClient returns a go-openai client for an OpenAI-compatible API whose HTTP client
// notes, for our retries and deliveries, what became of each request (attemptDoer).
func newClient(apiKey, baseURL string, hc *http.Client) *openai.Client {
	if hc == nil {
		hc = &http.Client{Transport: providerTransport}
	}
	cfg := openai.DefaultConfig(apiKey)
	cfg.BaseURL = strings.TrimRight(baseURL, "/")
	cfg.HTTPClient = attemptDoer{hc}
	return openai.NewClientWithConfig(cfg)
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Model returns the configured model name.
func (o *OpenAI) Model() string { return o.model }

// Dimensions returns the configured dimension or, if none was configured, the one the
// provider answered with so far (0 before the first successful call).
func (o *OpenAI) Dimensions() int {
	if o.dims > 0 {
		return o.dims
	}
	return int(o.learned.Load())
}

// Embed returns one vector per text. Inputs beyond the batch size are sent in several
// requests, one after another; the call fails as a whole if any of them fails. A request
// of several inputs that runs out of time (the attempt's Timeout, or a 408, 413 or 504 from
// the provider or a proxy before it) is not sent again whole: the client halves its batch
// size and sends the same inputs in smaller requests, as often as needed down to one input
// a request, and later calls keep the smaller size. A model server on a CPU finishes half
// the work in time where it could not finish all of it.
// Errors for which IsUnavailable is true mean the provider is down, overloaded or too slow;
// ProviderFailure and RetryAfter tell a circuit breaker what it needs of them. Under a
// context from Track every request counts in the Delivery; a hook from WithAttemptHook is
// asked before each retry and each request that resends the inputs of a split batch.
func (o *OpenAI) Embed(ctx context.Context, texts []string) (*Embeddings, error) {
	c := newCall(ctx)
	out := &Embeddings{Vectors: make([][]float32, 0, len(texts))}
	sends := make([]int, len(texts)) // how often each input was sent
	for start := 0; start < len(texts); {
		n := min(int(o.size.Load()), len(texts)-start)
		vectors, tokens, err := o.embedBatch(ctx, c, texts[start:start+n], sends[start:start+n], out)
		if errors.Is(err, errTooSlow) {
			o.shrink((n + 1) / 2)
			o.retry.log.LogAttrs(ctx, slog.LevelWarn, "embedding request ran out of time; sending smaller ones",
				slog.String("model", o.model), slog.Int("inputs", n), slog.Int("batch_size", o.BatchSize()))
			continue
		}
		if err != nil {
			return nil, c.finish(fmt.Errorf("llm.OpenAI.Embed: %w", o.endpoint.explain(err, "/embeddings")))
		}
		out.Vectors = append(out.Vectors, vectors...)
		out.Tokens += tokens
		start += n
	}
	return out, nil
}

// BatchSize is the most inputs the client now sends in one request: the configured size,
// or less once a request of that size ran out of time.
func (o *OpenAI) BatchSize() int { return int(o.size.Load()) }

// shrink lowers the batch size to n unless it is at most n already.
func (o *OpenAI) shrink(n int) {
	for {
		cur := o.size.Load()
		if cur <= int64(n) || o.size.CompareAndSwap(cur, int64(n)) {
			return
		}
	}
}

// errTooSlow marks a request of several inputs that ran out of time: smaller ones may not.
var errTooSlow = errors.New("the request ran out of time")

// embedBatch sends one request, retrying it while that can help and time allows. A
// request of several inputs that ran out of time is not retried: its error wraps
// errTooSlow, for the caller to split it. sends counts how often each input of batch was
// sent, this call's attempts included; out.Requests counts every request made.
func (o *OpenAI) embedBatch(ctx context.Context, c *call, batch []string, sends []int, out *Embeddings) ([][]float32, int, error) {
	req := openai.EmbeddingRequestStrings{
		Input:      batch,
		Model:      openai.EmbeddingModel(o.model),
		Dimensions: o.dims,
	}
	first := slices.Max(sends) + 1 // the inputs' attempt number: more than 1 after a split
	if first > 1 {
		if err := c.admit(ctx, first, nil); err != nil {
			return nil, 0, err
		}
	}
	for try := 1; ; try++ {
		a := c.attempt()
		a.inputs = batch
		actx, cancel := context.WithTimeout(withAttempt(ctx, a), o.timeout)
		resp, err := o.client.CreateEmbeddings(actx, req)
		cancel()
		out.Requests++
		for i := range sends {
			sends[i]++
		}
		err = sanitize(err, batch)
		if err == nil {
			a.tokens = promptTokens(resp.Usage, batch)
		}
		c.settle(a, err)
		if err == nil {
			return o.decode(resp, batch)
		}
		if len(batch) > 1 && ctx.Err() == nil && ranOutOfTime(err) {
			return nil, 0, fmt.Errorf("%w (%d inputs in %s): %w", errTooSlow, len(batch), o.timeout, err)
		}
		wait, stop := o.retry.next(ctx, try, a.after, err, ErrUnavailable)
		if stop == nil {
			stop = c.admit(ctx, first+try, err)
		}
		if stop == nil {
			stop = o.retry.wait(ctx, try, wait, err)
		}
		if stop == nil {
			continue
		}
		if ctxErr := ctx.Err(); stop == ctxErr && errors.Is(ctxErr, context.DeadlineExceeded) {
			return nil, 0, fmt.Errorf("%w: deadline reached after %d attempts: %w", ErrUnavailable, try, err)
		}
		return nil, 0, stop
	}
}

// ranOutOfTime reports whether a request failed because it took too long: our own
// deadline of the attempt, or a provider's or proxy's timeout or size refusal.
func ranOutOfTime(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		switch se.StatusCode {
		case http.StatusRequestTimeout, http.StatusRequestEntityTooLarge, http.StatusGatewayTimeout:
			return true
		}
		return false
	}
	return errors.Is(err, context.DeadlineExceeded)
}

// decode checks the answer against the request and puts the vectors in input order.
func (o *OpenAI) decode(resp openai.EmbeddingResponse, batch []string) ([][]float32, int, error) {
	if len(resp.Data) != len(batch) {
		return nil, 0, fmt.Errorf("provider returned %d embeddings for %d inputs", len(resp.Data), len(batch))
	}
	want := o.Dimensions()
	vectors := make([][]float32, len(batch))
	for _, d := range resp.Data {
		if d.Index < 0 || d.Index >= len(batch) || vectors[d.Index] != nil {
			return nil, 0, fmt.Errorf("provider returned an embedding with a bad or repeated index %d", d.Index)
		}
		if len(d.Embedding) == 0 {
			return nil, 0, fmt.Errorf("provider returned an empty embedding at index %d", d.Index)
		}
		if want == 0 {
			want = len(d.Embedding)
		}
		if len(d.Embedding) != want {
			if o.dims > 0 {
				return nil, 0, fmt.Errorf("model %q returned %d-dimensional vectors, but %d dimensions are configured: "+
					"set the dimensions to what the model produces, or use a model that supports the dimensions parameter",
					o.model, len(d.Embedding), o.dims)
			}
			return nil, 0, fmt.Errorf("model %q returned %d-dimensional vectors after %d-dimensional ones",
				o.model, len(d.Embedding), want)
		}
		vectors[d.Index] = d.Embedding
	}
	if o.dims == 0 && !o.learned.CompareAndSwap(0, int64(want)) && o.learned.Load() != int64(want) {
		return nil, 0, fmt.Errorf("model %q returned %d-dimensional vectors after %d-dimensional ones",
			o.model, want, o.learned.Load())
	}
	return vectors, promptTokens(resp.Usage, batch), nil
}

// promptTokens is what an answer to batch reported as its prompt tokens. Some servers
// (llama.cpp, older Ollama) report no usage: then sitetools counts them, so that
// budgets still see the spend.
func promptTokens(u openai.Usage, batch []string) int {
	tokens := u.PromptTokens
	if tokens <= 0 {
		for _, t := range batch {
			tokens += CountTokens(t)
		}
	}
	return tokens
}

// backoff is the wait before retry number attempt (1-based): exponential with equal
// jitter, so that clients that failed together do not retry together.
func (o *OpenAI) backoff(attempt int) time.Duration {
	d := o.base
	for i := 1; i < attempt && d < o.max; i++ {
		d *= 2
	}
	d = min(d, o.max)
	half := d / 2
	return half + rand.N(half+1)
}

// sanitize replaces go-openai's HTTP errors, whose texts carry the raw body, with a
// StatusError. It keeps the provider's message (trimmed, control characters removed) only
// where it cannot leak what was sent: inputs are the texts of the request, and a message
// that quotes any of them, or any message when inputs is nil, is left out.
func sanitize(err error, inputs []string) error {
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) && apiErr.HTTPStatusCode > 0 {
		se := &StatusError{StatusCode: apiErr.HTTPStatusCode, Type: apiErr.Type}
		switch c := apiErr.Code.(type) {
		case string:
			se.Code = c
		case int:
			if c != 0 { // go-openai reads a null code as 0
				se.Code = strconv.Itoa(c)
			}
		}
		if inputs != nil {
			se.Message = providerMessage(apiErr.Message, inputs)
		}
		return se
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) {
		return &StatusError{StatusCode: reqErr.HTTPStatusCode}
	}
	return err
}

// The bounds of a provider's message kept in an error.
const (
	maxMessageRunes = 300
	// quoteRunes is the shortest run of a message that, found in an input, counts as
	// quoting it.
	quoteRunes = 20
)

// providerMessage is msg on one line, control characters removed, at most
// maxMessageRunes long; "" when it quotes one of inputs.
func providerMessage(msg string, inputs []string) string {
	msg = strings.Join(strings.FieldsFunc(msg, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if r := []rune(msg); len(r) > maxMessageRunes {
		msg = string(r[:maxMessageRunes-1]) + "…"
	}
	r := []rune(msg)
	for i := 0; i+quoteRunes <= len(r); i++ {
		window := string(r[i : i+quoteRunes])
		for _, in := range inputs {
			if strings.Contains(in, window) {
				return ""
			}
		}
	}
	return msg
}

// retryable reports whether repeating the request may succeed.
func retryable(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return retryableStatus(se.StatusCode)
	}
	return errors.Is(err, context.DeadlineExceeded) || isTransportFailure(err)
}
