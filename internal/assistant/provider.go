package assistant

import (
	"context"
	"strings"

	"github.com/sitetools/sitetools/internal/budget"
	"github.com/sitetools/sitetools/internal/llm"
)

// reply is a completed model answer.
type reply struct {
	*llm.ChatResponse
	request bool // JSON mode: the text is a tool request, not for the visitor
}

// complete makes one provider call, whose prompt is estimated at prompt tokens, behind
// the budget and records it. In JSON mode the start of the answer is held back until it
// is clear whether it is text for the visitor (streamed from then on) or a tool request
// (never shown).
func (t *turnState) complete(ctx context.Context, req llm.ChatRequest, prompt int, jsonMode bool) (*reply, error) {
	a := t.a
	var reservation *budget.Reservation
	if a.opts.Budget != nil {
		r, err := a.opts.Budget.Reserve(ctx, int64(prompt+req.MaxTokens))
		if err != nil {
			return nil, err
		}
		reservation = r
	}
	cctx, cancel := context.WithTimeout(ctx, a.opts.ProviderTimeout)
	defer cancel()

	var received, held strings.Builder
	kind := replyText
	if jsonMode {
		kind = replyUndecided
	}
	onDelta := func(d string) error {
		received.WriteString(d)
		switch kind {
		case replyText:
			return t.delta(d)
		case replyRequest:
			return nil
		}
		held.WriteString(d)
		if kind = classifyReply(held.String()); kind == replyText {
			return t.delta(held.String())
		}
		return nil
	}
	resp, err := a.opts.Provider.Stream(cctx, req, onDelta)
	t.mu.Lock()
	t.usage.ProviderCalls++
	t.mu.Unlock()
	entry := budget.Entry{Kind: "llm", Channel: "chat", Tool: "chat", Model: a.opts.Provider.Model(), Outcome: "ok"}
	if err != nil {
		// A provider that failed may have charged for what it streamed; count that.
		var used int64
		if received.Len() > 0 {
			used = int64(prompt + llm.CountTokens(received.String()))
		}
		t.settle(ctx, reservation, used)
		entry.Tokens, entry.CostUSD, entry.Outcome = int(used), float64(used)*a.opts.PricePerMTok/1e6, "error"
		t.record(ctx, entry)
		return nil, err
	}
	if kind == replyUndecided {
		// The whole answer was too short to tell ("[", a bare fence): text only if blank.
		if strings.TrimSpace(resp.Text) == "" {
			kind = replyText
		} else {
			kind = replyRequest
		}
	}
	used := int64(resp.Usage.TotalTokens)
	t.settle(ctx, reservation, used)
	entry.Tokens, entry.CostUSD = int(used), float64(used)*a.opts.PricePerMTok/1e6
	t.record(ctx, entry)
	t.mu.Lock()
	t.usage.PromptTokens += resp.Usage.PromptTokens
	t.usage.CompletionTokens += resp.Usage.CompletionTokens
	t.usage.TotalTokens += resp.Usage.TotalTokens
	t.mu.Unlock()
	return &reply{ChatResponse: resp, request: kind == replyRequest}, nil
}

func (t *turnState) settle(ctx context.Context, r *budget.Reservation, used int64) {
	if r == nil {
		return
	}
	var err error
	if used > 0 {
		err = r.Settle(ctx, used)
	} else {
		err = r.Release(ctx)
	}
	if err != nil {
		t.a.opts.Logger.Warn("LLM budget settle failed", "err", err.Error())
	}
}

func (t *turnState) record(ctx context.Context, e budget.Entry) {
	if t.a.opts.Ledger == nil {
		return
	}
	if err := t.a.opts.Ledger.Record(ctx, e); err != nil {
		t.a.opts.Logger.Warn("ledger write failed", "err", err.Error())
	}
}
