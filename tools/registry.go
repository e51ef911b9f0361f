package tools

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"runtime/debug"
	"slices"
	"sync"
	"time"
)

// Annotations are hints about a tool's behaviour, as MCP defines them. They are all
// emitted explicitly so that no client falls back to a default.
type Annotations struct {
	ReadOnly    bool `json:"readOnlyHint"`
	Destructive bool `json:"destructiveHint"`
	Idempotent  bool `json:"idempotentHint"`
	OpenWorld   bool `json:"openWorldHint"`
}

// Handler runs a tool. args have already been validated against the input schema.
// A failure the model should act on is returned as a Result with IsError; an error
// is for failures the model cannot fix (an *Error keeps its code, anything else is internal).
type Handler func(ctx context.Context, args json.RawMessage) (*Result, error)

// Tool is a tool's metadata plus its handler.
type Tool struct {
	Name         string
	Title        string
	Description  string
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage // optional
	Annotations  Annotations
	// Timeout bounds one call; zero means the registry's default.
	Timeout time.Duration
	// Capabilities are what other parts may rely on the tool for; they are not published.
	Capabilities []Capability
	// Light reports whether a call with these (not yet validated) arguments is light work
	// that makes no paid call, such as search_site's as-you-type mode: the rate limit
	// counts it as a quarter of a call. nil: no call is.
	Light   func(args json.RawMessage) bool
	Handler Handler
}

// Capability names a contract a tool keeps beyond its schemas, so that a part of the
// service can find the tool it needs by what it does rather than by its name.
type Capability string

// CapabilitySiteSearch: the tool takes {"query": string, "limit": integer} and answers
// with structured content {"results": [{"title", "url", "anchor", "snippet"}]}, best
// first. The chat answers from it when no model can (a retrieval-only answer).
const CapabilitySiteSearch Capability = "site-search"

// Definition is the public description of a tool, identical on every channel.
type Definition struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  Annotations     `json:"annotations"`
}

// Definition returns the tool's public description.
func (t *Tool) Definition() Definition {
	return Definition{
		Name:         t.Name,
		Title:        t.Title,
		Description:  t.Description,
		InputSchema:  t.InputSchema,
		OutputSchema: t.OutputSchema,
		Annotations:  t.Annotations,
	}
}

// Channel names the way a call reached the registry, in metrics, the ledger and the
// idempotency scope.
type Channel string

// The channels.
const (
	// ChannelWebMCP is POST /api/chat/tools: the page's WebMCP bridge, the relay and any
	// same-origin caller.
	ChannelWebMCP Channel = "webmcp"
	// ChannelMCP is remote MCP at /mcp.
	ChannelMCP Channel = "mcp"
	// ChannelChat is the site chat's own tool calls.
	ChannelChat Channel = "chat"
	// ChannelInternal is a call from inside the process (no Request in the context).
	ChannelInternal Channel = "internal"
	// ChannelEval is `sitetools eval`: the owner's own questions, asked from the command
	// line to measure the search.
	ChannelEval Channel = "eval"
)

// Request describes who is calling, for rate limits, idempotency and metrics. It
// travels in the context; see WithRequest.
type Request struct {
	Channel        Channel
	Client         string // rate-limit key (a client address); never logged
	IdempotencyKey string
}

type requestKey struct{}

// WithRequest returns ctx carrying r.
func WithRequest(ctx context.Context, r Request) context.Context {
	return context.WithValue(ctx, requestKey{}, r)
}

// RequestFrom returns the Request carried by ctx, or the zero Request.
func RequestFrom(ctx context.Context) Request {
	r, _ := ctx.Value(requestKey{}).(Request)
	return r
}

// Call is one invocation on its way through the interceptors.
type Call struct {
	Tool      *Tool
	Arguments json.RawMessage // canonical JSON object, not yet validated
	Request   Request
}

// Invoker runs a call.
type Invoker func(ctx context.Context, call *Call) (*Result, error)

// Interceptor wraps every call of every tool: rate limits, idempotency, metrics.
type Interceptor func(ctx context.Context, call *Call, next Invoker) (*Result, error)

// Options configure a Registry. A nil *Options means the defaults.
type Options struct {
	// DefaultTimeout bounds a call of a tool without its own Timeout (default 10s).
	DefaultTimeout time.Duration
	// Interceptors run outermost first around validation and the handler.
	Interceptors []Interceptor
	// Logger receives recovered panics; nil discards.
	Logger *slog.Logger
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// Registry is the set of tools, keyed by name and listed in name order.
type Registry struct {
	timeout      time.Duration
	interceptors []Interceptor
	logger       *slog.Logger

	mu      sync.RWMutex
	tools   map[string]*entry
	catalog *Catalog // nil until first asked for after a change
}

type entry struct {
	tool   Tool
	input  *schema
	output *schema // nil without an output schema
}

// NewRegistry returns an empty registry.
func NewRegistry(opts *Options) *Registry {
	if opts == nil {
		opts = &Options{}
	}
	r := &Registry{
		timeout:      opts.DefaultTimeout,
		interceptors: slices.Clone(opts.Interceptors),
		logger:       opts.Logger,
		tools:        map[string]*entry{},
	}
	if r.timeout <= 0 {
		r.timeout = 10 * time.Second
	}
	if r.logger == nil {
		r.logger = slog.New(slog.DiscardHandler)
	}
	return r
}

// Add registers t. It fails on an invalid name, a duplicate, a missing handler, or a
// schema that is not a JSON Schema object; registration happens at start-up, so such an
// error stops the service before it serves.
func (r *Registry) Add(t Tool) error {
	if !namePattern.MatchString(t.Name) {
		return fmt.Errorf("tools.Add: invalid tool name %q: must match %s", t.Name, namePattern)
	}
	if t.Description == "" {
		return fmt.Errorf("tools.Add %s: description is required", t.Name)
	}
	if t.Handler == nil {
		return fmt.Errorf("tools.Add %s: handler is required", t.Name)
	}
	in, err := compileSchema(t.Name+"/input", t.InputSchema)
	if err != nil {
		return fmt.Errorf("tools.Add %s: input schema: %w", t.Name, err)
	}
	if in.typ != "object" {
		return fmt.Errorf("tools.Add %s: input schema must have \"type\": \"object\"", t.Name)
	}
	t.InputSchema = in.raw
	e := &entry{tool: t, input: in}
	if len(t.OutputSchema) > 0 {
		out, err := compileSchema(t.Name+"/output", t.OutputSchema)
		if err != nil {
			return fmt.Errorf("tools.Add %s: output schema: %w", t.Name, err)
		}
		if out.typ != "object" {
			return fmt.Errorf("tools.Add %s: output schema must have \"type\": \"object\"", t.Name)
		}
		e.output = out
		e.tool.OutputSchema = out.raw
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.tools[t.Name]; dup {
		return fmt.Errorf("tools.Add: duplicate tool name %q", t.Name)
	}
	r.tools[t.Name] = e
	r.catalog = nil
	return nil
}

// MustAdd is Add that panics, for registration at start-up.
func (r *Registry) MustAdd(t Tool) {
	if err := r.Add(t); err != nil {
		panic(err)
	}
}

// Lookup returns the tool named name.
func (r *Registry) Lookup(name string) (*Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.tools[name]
	if !ok {
		return nil, false
	}
	return &e.tool, true
}

// WithCapability returns the first tool, in name order, that declares c.
func (r *Registry) WithCapability(c Capability) (*Tool, bool) {
	for _, t := range r.Tools() {
		if slices.Contains(t.Capabilities, c) {
			return t, true
		}
	}
	return nil, false
}

// Tools returns every tool in name order.
func (r *Registry) Tools() []*Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Tool, 0, len(r.tools))
	for _, e := range r.tools {
		out = append(out, &e.tool)
	}
	slices.SortFunc(out, func(a, b *Tool) int { return compareStrings(a.Name, b.Name) })
	return out
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Catalog is the registry's tool list as ready-to-serve JSON.
type Catalog struct {
	Definitions []Definition
	JSON        []byte // {"tools":[...]}
	ETag        string // strong validator of JSON
}

// Catalog returns the tool list, computed once per change of the registry.
func (r *Registry) Catalog() *Catalog {
	r.mu.RLock()
	c := r.catalog
	r.mu.RUnlock()
	if c != nil {
		return c
	}
	tools := r.Tools()
	defs := make([]Definition, len(tools))
	for i, t := range tools {
		defs[i] = t.Definition()
	}
	b, err := json.Marshal(struct {
		Tools []Definition `json:"tools"`
	}{defs})
	if err != nil {
		// Schemas were compacted at registration and everything else is a string or bool.
		panic(fmt.Sprintf("tools.Catalog: %v", err))
	}
	c = &Catalog{Definitions: defs, JSON: b, ETag: ETag(b)}
	r.mu.Lock()
	if len(r.tools) == len(defs) { // unchanged meanwhile
		r.catalog = c
	}
	r.mu.Unlock()
	return c
}

// ETag is a strong entity tag of b: the catalog's, and that of every document rendered
// from it, so that all of them change together.
func ETag(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
}

// Call validates args against the tool's input schema and runs it through the
// interceptors, under the tool's deadline. A panic in the handler becomes an internal
// error. The returned error is an *Error or wraps one; see AsError.
func (r *Registry) Call(ctx context.Context, name string, args json.RawMessage) (*Result, error) {
	r.mu.RLock()
	e, ok := r.tools[name]
	r.mu.RUnlock()
	if !ok {
		return nil, &Error{Code: CodeUnknownTool, Message: fmt.Sprintf("no tool named %q; list the tools to see what exists", Truncate(name, 64))}
	}
	args, err := canonicalArguments(args)
	if err != nil {
		return nil, err
	}
	call := &Call{Tool: &e.tool, Arguments: args, Request: RequestFrom(ctx)}
	invoke := func(ctx context.Context, call *Call) (*Result, error) { return r.run(ctx, e, call.Arguments) }
	for i := len(r.interceptors) - 1; i >= 0; i-- {
		ic, next := r.interceptors[i], invoke
		invoke = func(ctx context.Context, call *Call) (*Result, error) { return ic(ctx, call, next) }
	}
	return invoke(ctx, call)
}

func (r *Registry) run(ctx context.Context, e *entry, args json.RawMessage) (res *Result, err error) {
	if details := e.input.validate(args); len(details) > 0 {
		return nil, &Error{Code: CodeInvalidArguments, Message: invalidMessage(details), Details: details}
	}
	timeout := e.tool.Timeout
	if timeout <= 0 {
		timeout = r.timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			r.logger.Error("tool panicked", "tool", e.tool.Name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			res, err = nil, Internal(fmt.Errorf("panic: %v", p))
		}
	}()
	res, err = e.tool.Handler(ctx, args)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil && ErrorCode(err) == CodeInternal {
			return ErrorResult("The tool %s did not finish within %s; try again, perhaps with a narrower request.", e.tool.Name, timeout), nil
		}
		return nil, err
	}
	if res == nil {
		return nil, Internal(errors.New("handler returned no result"))
	}
	if res.Content == nil {
		res.Content = []Content{}
	}
	if e.output != nil && !res.IsError {
		sc, err := json.Marshal(res.StructuredContent)
		if err != nil {
			return nil, Internal(fmt.Errorf("structured content: %w", err))
		}
		if details := e.output.validate(sc); len(details) > 0 {
			return nil, Internal(fmt.Errorf("%s: result does not match its output schema: %v", e.tool.Name, details))
		}
	}
	return res, nil
}
