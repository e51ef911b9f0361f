package assistant

import (
	"context"
	"strings"

	"github.com/sitetools/sitetools/internal/breaker"
	"github.com/sitetools/sitetools/internal/budget"
	"github.com/sitetools/sitetools/internal/llm"
)

// reply is a completed model answer.
type reply struct {
	*llm.ChatResponse
	request bool // JSON mode: the text is a tool request, not for the visitor
}

// complete makes one provider call, whose prompt is estimated at prompt tokens, behind
// the circuit breaker and the budget, and records it. In JSON mode the start of the
// answer is held back until it is clear whether it is text for the visitor (streamed
// from then on) or a tool request (never shown).
func (t *turnState) complete(ctx context.Context, req llm.ChatRequest, prompt int, jsonMode bool) (*reply, error) {
	a := t.a
	model := a.opts.Provider.Model()
	entry := budget.Entry{Kind: "llm", Channel: "chat", Tool: "chat", Model: model, Outcome: budget.OutcomeOK}
	brk, err := a.opts.Breaker.Allow() // a nil Breaker admits every call
	if err != nil {
		entry.Outcome = budget.OutcomeSkipped
		t.record(ctx, entry)
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, a.opts.ProviderTimeout)
	defer cancel()
	charge, err := t.reserve(cctx, model, prompt, req.MaxTokens)
	if err != nil {
		brk.Done(breaker.ErrNotCalled)
		return nil, err
	}
	cctx, delivery := llm.Track(cctx)
	cctx = llm.WithAttemptHook(cctx, charge.extend)

	gate := &replyGate{t: t, kind: replyText}
	if jsonMode {
		gate.kind = replyUndecided
	}
	resp, err := a.opts.Provider.Stream(cctx, req, gate.onDelta)
	brk.Done(err)
	t.mu.Lock()
	t.usage.ProviderCalls++
	t.mu.Unlock()
	unknown := charge.per * int64(delivery.Unknown())
	if err != nil {
		// Requests that may have reached the provider are charged at their reservation;
		// if none did, nothing is.
		entry.Outcome = budget.OutcomeError
		if unknown > 0 {
			entry.Outcome = budget.OutcomeUnknown
		}
		charge.settle(unknown)
		entry.Tokens, entry.CostUSD = int(unknown), float64(unknown)*a.opts.PricePerMTok/1e6
		t.record(ctx, entry)
		return nil, err
	}
	kind := gate.kind
	if kind == replyUndecided {
		// The whole answer was too short to tell ("[", a bare fence): text only if blank.
		if strings.TrimSpace(resp.Text) == "" {
			kind = replyText
		} else {
			kind = replyRequest
		}
	}
	if a.opts.Budget != nil && resp.Usage.Reported {
		a.opts.Budget.Learn(model, int64(prompt), int64(resp.Usage.PromptTokens))
	}
	used := int64(resp.Usage.TotalTokens) + unknown
	charge.settle(used)
	entry.Tokens, entry.CostUSD = int(used), float64(used)*a.opts.PricePerMTok/1e6
	t.record(ctx, entry)
	t.mu.Lock()
	t.usage.PromptTokens += resp.Usage.PromptTokens
	t.usage.CompletionTokens += resp.Usage.CompletionTokens
	t.usage.TotalTokens += resp.Usage.TotalTokens
	t.mu.Unlock()
	return &reply{ChatResponse: resp, request: kind == replyRequest}, nil
}

// replyGate passes a streamed answer to the visitor: at once when it is text, never
// when it is a tool request (JSON mode), and held back while that is undecided.
type replyGate struct {
	t    *turnState
	kind replyKind
	held strings.Builder
}

func (g *replyGate) onDelta(d string) error {
	switch g.kind {
	case replyText:
		return g.t.delta(d)
	case replyRequest:
		return nil
	}
	g.held.WriteString(d)
	if g.kind = classifyReply(g.held.String()); g.kind == replyText {
		return g.t.delta(g.held.String())
	}
	return nil
}

// charge is one provider call's reservation: per is what each of its requests holds
// (the prompt by the provider's learned ratio, and the most the answer may take).
type charge struct {
	r   *budget.Reservation
	per int64
}

// reserve holds a request's worth of the LLM budget (none when there is no budget).
func (t *turnState) reserve(ctx context.Context, model string, prompt, maxTokens int) (*charge, error) {
	b := t.a.opts.Budget
	if b == nil {
		return &charge{}, nil
	}
	per := b.Size(model, int64(prompt)) + int64(maxTokens)
	r, err := b.Reserve(ctx, per)
	if err != nil {
		return nil, err
	}
	return &charge{r: r, per: per}, nil
}

// extend reserves another request's worth before a retry.
func (c *charge) extend(ctx context.Context, _ int) error {
	if c.r == nil {
		return nil
	}
	return c.r.Extend(ctx, c.per)
}

// settle charges used tokens (0: releases the reservation).
func (c *charge) settle(used int64) {
	if c.r == nil {
		return
	}
	if used > 0 {
		c.r.Settle(used)
	} else {
		c.r.Release()
	}
}

// record writes the ledger row of a model call off the turn's path: the turn goes on to
// its tools or its answer meanwhile, and waits for its rows before it ends (ledgerDone).
func (t *turnState) record(ctx context.Context, e budget.Entry) {
	if t.a.opts.Ledger == nil {
		return
	}
	t.ledger.Add(1)
	go func() {
		defer t.ledger.Done()
		if err := t.a.opts.Ledger.Record(ctx, e); err != nil {
			t.a.opts.Logger.Warn("ledger write failed", "err", err.Error())
		}
	}()
}
