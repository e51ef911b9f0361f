package assistant

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sitetools/sitetools/internal/breaker"
	"github.com/sitetools/sitetools/internal/budget"
	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/tools"
)

// Tool modes.
const (
	ToolModeNative = "native"
	ToolModeJSON   = "json"
)

// Roles of a transcript's messages.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Provider is a streaming chat model; *llm.Chat is one.
type Provider interface {
	Model() string
	Stream(ctx context.Context, req llm.ChatRequest, onDelta func(text string) error) (*llm.ChatResponse, error)
}

// Options configure an Assistant. Zero values mean the defaults given per field.
type Options struct {
	// Registry is where the tools come from; required.
	Registry *tools.Registry
	// Provider answers; nil means every turn is answered retrieval-only.
	Provider Provider
	// ToolMode is ToolModeNative (default) or ToolModeJSON.
	ToolMode string
	// Budget is the daily LLM token budget (nil: unlimited); Ledger records every
	// provider call (nil: nowhere).
	Budget       *budget.Budget
	Ledger       *budget.Ledger
	PricePerMTok float64 // USD per million tokens, for the ledger's estimate
	// Breaker keeps calls off a provider that is down: while it is open, turns are
	// answered retrieval-only at once (nil: none).
	Breaker *breaker.Breaker
	// Persona is the persona and tone, from the site owner (default DefaultPersona).
	Persona string
	// MaxToolRounds bounds the rounds of tool calls of one turn (default 4).
	MaxToolRounds int
	// MaxOutputTokens bounds each answer of the model (default 1024).
	MaxOutputTokens int
	// Concurrency bounds the tool calls of one round that run at once (default 4).
	Concurrency int
	// ToolTimeout is the deadline of a tool call without one of its own (default 10s);
	// a call gets its tool's deadline plus a few seconds for the interceptors.
	ToolTimeout time.Duration
	// ProviderTimeout is the deadline of one provider call, streaming included
	// (default 60s).
	ProviderTimeout time.Duration
	// Sanitize bounds each tool result shown to the model.
	Sanitize SanitizeOptions
	// Logger gets provider failures (never message text, arguments or addresses); nil
	// discards.
	Logger *slog.Logger
}

// Assistant runs chat turns. It is safe for concurrent use.
type Assistant struct {
	opts Options
	cat  atomic.Pointer[catalog]
}

// New checks opts and returns an Assistant.
func New(opts Options) (*Assistant, error) {
	if opts.Registry == nil {
		return nil, errors.New("assistant.New: a registry is required")
	}
	switch opts.ToolMode {
	case "":
		opts.ToolMode = ToolModeNative
	case ToolModeNative, ToolModeJSON:
	default:
		return nil, fmt.Errorf("assistant.New: tool mode must be %s or %s, got %q", ToolModeNative, ToolModeJSON, opts.ToolMode)
	}
	if strings.TrimSpace(opts.Persona) == "" {
		opts.Persona = DefaultPersona
	}
	orDefault(&opts.MaxToolRounds, 4)
	orDefault(&opts.MaxOutputTokens, 1024)
	orDefault(&opts.Concurrency, 4)
	orDefault(&opts.ToolTimeout, 10*time.Second)
	orDefault(&opts.ProviderTimeout, 60*time.Second)
	opts.Sanitize = opts.Sanitize.withDefaults()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Assistant{opts: opts}, nil
}

// Mode is ModeLLM with a provider, ModeRetrieval without.
func (a *Assistant) Mode() string {
	if a.opts.Provider == nil {
		return ModeRetrieval
	}
	return ModeLLM
}

// catalog returns the chat's view of the registry as it is now.
func (a *Assistant) catalog() *catalog {
	cat := a.opts.Registry.Catalog()
	if c := a.cat.Load(); c != nil && c.etag == cat.ETag {
		return c
	}
	c := buildCatalog(cat, a.opts.Persona, a.opts.ToolMode)
	a.cat.Store(c)
	return c
}

// Message is one message of the visitor's transcript.
type Message struct {
	Role    string // RoleUser or RoleAssistant
	Content string
}

// Turn is one chat request: the transcript, whose last message is the visitor's, who
// asks, and in which language.
type Turn struct {
	Messages []Message
	Client   string // rate-limit key (the client address); never logged
	// Lang is the visitor's language (a BCP 47 tag), for the texts the server writes
	// itself; one that is not among Languages means DefaultLanguage.
	Lang string
}

// Run answers turn, sending its events to emit (called from one goroutine at a time).
// Failures after the stream began are error events, not errors: Run returns an error
// only when ctx ends or emit fails (the client is gone), or for a turn that breaks the
// contract (no messages, the last not the visitor's).
func (a *Assistant) Run(ctx context.Context, turn Turn, emit func(Event) error) error {
	if n := len(turn.Messages); n == 0 || turn.Messages[n-1].Role != RoleUser {
		return errors.New("assistant.Run: the last message must be the visitor's")
	}
	t := &turnState{a: a, emitFn: emit, req: tools.Request{Channel: tools.ChannelChat, Client: turn.Client}, seen: map[string]bool{},
		words: wordsFor(turn.Lang)}
	defer t.ledger.Wait() // a turn whose client left still has its calls recorded
	if a.opts.Provider == nil {
		return t.retrieve(ctx, turn, ReasonNotConfigured)
	}
	return t.converse(ctx, turn)
}

// turnState is one turn in progress.
type turnState struct {
	a     *Assistant
	req   tools.Request
	words *words // the visitor's language

	mu       sync.Mutex // guards what follows; tool calls run in parallel
	emitFn   func(Event) error
	emitErr  error
	streamed bool            // some text reached the visitor
	answer   strings.Builder // the text that did
	usage    Usage
	sources  []Source
	seen     map[string]bool
	calls    int

	ledger sync.WaitGroup // the ledger rows being written
}

func (t *turnState) emit(name string, data any) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.emitErr != nil {
		return t.emitErr
	}
	if err := t.emitFn(Event{Name: name, Data: data}); err != nil {
		t.emitErr = fmt.Errorf("assistant: client gone: %w", err)
	}
	return t.emitErr
}

func (t *turnState) delta(text string) error {
	if text == "" {
		return nil
	}
	t.mu.Lock()
	t.streamed = true
	t.answer.WriteString(text)
	t.mu.Unlock()
	return t.emit(EventDelta, Delta{Text: text})
}

func (t *turnState) nextID() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.calls++
	return fmt.Sprintf("call_%d", t.calls)
}

// finish sends sources and message.done.
func (t *turnState) finish(mode, reason string) error {
	t.mu.Lock()
	streamed := t.streamed
	t.mu.Unlock()
	if !streamed {
		if err := t.delta(t.words.noAnswer); err != nil {
			return err
		}
	}
	if err := t.emit(EventSources, Sources{Items: t.usedSources(mode)}); err != nil {
		return err
	}
	t.mu.Lock()
	u := t.usage
	contact := pointsToContact(t.answer.String())
	t.mu.Unlock()
	t.ledger.Wait() // the turn's calls are on the ledger when it ends
	return t.emit(EventDone, Done{Usage: u, Mode: mode, Reason: reason, Kind: AnswerKind(mode, reason), ContactOffered: contact})
}

// fail ends the turn with an error event.
func (t *turnState) fail(code, message string) error {
	t.ledger.Wait()
	return t.emit(EventError, Error{Code: code, Message: message})
}

// converse is the model's loop: ask, run the tools it asks for, answer with their
// results, until it answers the visitor or the rounds run out.
func (t *turnState) converse(ctx context.Context, turn Turn) error {
	a := t.a
	cat := a.catalog()
	proto := a.protocol()
	msgs := []llm.ChatMessage{
		{Role: "system", Content: cat.system},
		{Role: "user", Content: visitorMessage(turn.Messages)},
	}
	corrected := false // the model has been asked once to correct a tool request
	for round := 0; ; round++ {
		toolsAllowed := round < a.opts.MaxToolRounds
		req := llm.ChatRequest{Messages: msgs, MaxTokens: a.opts.MaxOutputTokens}
		proto.prepare(&req, cat, toolsAllowed)
		reply, err := t.complete(ctx, req, cat.estimate(req), proto.textual())
		if err != nil {
			return t.providerFailed(ctx, turn, round, err)
		}
		batch, correction := proto.calls(reply)
		if correction != "" {
			if !toolsAllowed {
				return t.stopAtBound()
			}
			if corrected {
				return t.modelFailed(round)
			}
			corrected = true
			msgs = append(msgs, llm.ChatMessage{Role: "assistant", Content: reply.Text}, llm.ChatMessage{Role: "user", Content: correction})
			continue
		}
		if len(batch) == 0 {
			return t.finish(ModeLLM, ReasonStop)
		}
		if !toolsAllowed {
			return t.stopAtBound()
		}
		results := t.runBatch(ctx, cat, batch)
		if err := ctx.Err(); err != nil {
			return err
		}
		var invalid bool
		msgs, invalid = proto.answer(msgs, reply, batch, results, round+1 >= a.opts.MaxToolRounds)
		if invalid {
			if corrected {
				return t.modelFailed(round)
			}
			corrected = true
		}
	}
}

// modelFailed ends a turn whose model sent an invalid tool request twice.
func (t *turnState) modelFailed(round int) error {
	t.a.opts.Logger.Warn("chat model sent an invalid tool request twice", "tool_mode", t.a.opts.ToolMode, "round", round)
	return t.fail(CodeModelError, t.words.modelFailed)
}

// stopAtBound ends a turn whose model still wants tools after the last round.
func (t *turnState) stopAtBound() error {
	if err := t.delta(t.words.stoppedAfter(t.a.opts.MaxToolRounds)); err != nil {
		return err
	}
	return t.finish(ModeLLM, ReasonMaxToolRounds)
}

// providerFailed decides what a failed provider call means for the turn: the end, when
// the client is gone; a retrieval-only answer, when nothing has reached the visitor
// yet; an error event otherwise.
func (t *turnState) providerFailed(ctx context.Context, turn Turn, round int, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	t.mu.Lock()
	emitErr, streamed := t.emitErr, t.streamed
	t.mu.Unlock()
	if emitErr != nil {
		return emitErr
	}
	reason := ReasonUnavailable
	if errors.Is(err, budget.ErrBudgetExhausted) {
		switch {
		case errors.Is(err, budget.ErrClientShareSpent):
			reason = ReasonClientShare
		case errors.Is(err, budget.ErrPaced):
			reason = ReasonPaced
		default:
			reason = ReasonBudgetExhausted
		}
		t.a.opts.Logger.Info("LLM budget spent; the chat answers retrieval-only", "round", round, "reason", reason)
	} else if errors.Is(err, breaker.ErrOpen) {
		t.a.opts.Logger.Debug("chat provider circuit open; the chat answers retrieval-only", "round", round)
	} else {
		t.a.opts.Logger.Warn("chat provider call failed", "round", round, "err", err.Error())
	}
	if !streamed {
		return t.retrieve(ctx, turn, reason)
	}
	return t.fail(tools.CodeUnavailable, t.words.stoppedAnswer)
}
