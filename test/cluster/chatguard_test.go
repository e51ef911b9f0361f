package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/internal/testkit"
)

// chatQuestion is every turn's question: the same prompt, so the same reservation.
const chatQuestion = "Do you do accessibility audits, and what do they cost?"

// TestChatCostGuard: three replicas behind nginx with a chat model (the fake) and a
// small daily LLM budget.
//
// A slow model (it takes 3 s, LLM_TIMEOUT is 1 s): 30 chat turns through nginx each end
// within LLM_TIMEOUT and a little with the retrieval-only answer, because the model
// timed out, its circuit is open, or the budget is spent. Every call that timed out is
// charged at its reservation (ledger outcome unknown); the day's used never passes the
// limit and what the model received stays within 1.25 × the limit; the breaker opens.
//
// A model that counts 8 tokens for every word: turns until the budget is spent (the
// retrieval-only answer, llm_budget_exhausted). The day's used never passes the limit,
// is what the ledger's rows add up to, and what the model counted and reported stays
// within 1.25 × the limit.
func TestChatCostGuard(t *testing.T) {
	t.Parallel()
	t.Run("slow model", func(t *testing.T) {
		t.Parallel()
		slowChatModel(t)
	})
	t.Run("over-counting model", func(t *testing.T) {
		t.Parallel()
		overCountingChatModel(t)
	})
}

// chatCluster starts three replicas whose chat model is the fake, with LLM_TIMEOUT
// timeout and, first, a budget no turn of the test can spend: calibrate sets the limit.
func chatCluster(t *testing.T, model *llmtest.ChatServer, timeout time.Duration) *cluster {
	t.Helper()
	return startCluster(t, 3, map[string]string{
		"LLM_BASE_URL":           model.BaseURL(),
		"LLM_MODEL":              "fake-model",
		"LLM_TIMEOUT":            timeout.String(),
		"LLM_DAILY_TOKEN_BUDGET": strconv.Itoa(1 << 40),
	})
}

// calibrate sends one chat turn and returns what the ledger charged for its one model
// call, then restarts the replicas with a daily limit of the day's used plus calls × that
// charge (and a half, so that the last call does not just fit), and returns the limit.
// A reservation is 8 × sitetools' estimate of the prompt (until the model first reports
// its count) plus the most the answer may take, and the persona and the tools make most
// of the prompt: measuring it keeps the test's budget a number of calls, whatever they
// are.
func calibrate(t *testing.T, c *cluster, calls int64) (charge, limit int64) {
	t.Helper()
	if done, _, err := chatTurn(c.URL(), chatQuestion); err != nil {
		t.Fatalf("calibration turn: %v", err)
	} else {
		t.Logf("calibration turn: %+v", done)
	}
	conn := c.DB(t)
	used := waitIdle(t, conn, "llm")
	n, tokens := ledgerRows(t, conn, "llm", "", "")
	if n != 1 || tokens == 0 {
		t.Fatalf("the calibration turn left %d ledger rows of llm with %d tokens, want 1 with tokens", n, tokens)
	}
	limit = used + calls*tokens + tokens/2
	c.RestartWith(map[string]string{"LLM_DAILY_TOKEN_BUDGET": strconv.FormatInt(limit, 10)})
	return tokens, limit
}

// slowChatModel is TestChatCostGuard's slow model.
func slowChatModel(t *testing.T) {
	const (
		turns   = 30
		timeout = time.Second     // LLM_TIMEOUT
		slack   = 2 * time.Second // the retrieval-only answer after it
	)
	model := llmtest.NewChatServer(t)
	model.SetDelay(3 * time.Second)
	c := chatCluster(t, model, timeout)
	// 14 calls: 5 failures in a row on one replica open its breaker, and spread over 3
	// replicas, 14 calls give some replica 5.
	charge, limit := calibrate(t, c, 14)
	t.Logf("a timed-out call is charged %d tokens; the limit is %d", charge, limit)

	reasons := map[string]int{}
	var longest time.Duration
	for i := range turns {
		done, took, err := chatTurn(c.URL(), chatQuestion)
		longest = max(longest, took)
		switch {
		case err != nil:
			t.Errorf("turn %d: %v", i, err)
		case done.Mode != "retrieval" || (done.Reason != "llm_unavailable" && done.Reason != "llm_budget_exhausted"):
			t.Errorf("turn %d ended with mode %q, reason %q; want the retrieval-only answer, llm_unavailable or llm_budget_exhausted", i, done.Mode, done.Reason)
		case took > timeout+slack:
			t.Errorf("turn %d took %v, more than LLM_TIMEOUT %v and %v", i, took.Round(time.Millisecond), timeout, slack)
		}
		reasons[done.Reason]++
	}
	conn := c.DB(t)
	used := waitIdle(t, conn, "llm")
	received := int64(model.ReceivedTokens())
	opened, saved, each := breakerTotals(t, c, "llm")
	t.Logf("%d turns by reason %v, the longest %v; the model received %d requests, %d prompt tokens (bound 1.25 × %d = %d); used %d",
		turns, reasons, longest.Round(time.Millisecond), model.Calls(), received, limit, limit*5/4, used)
	t.Logf("llm ledger: %s", ledgerSummary(t, conn, "llm"))
	t.Logf("llm breakers: %s (opened %v, saved %v in all)", each, opened, saved)
	if 4*received > 5*limit {
		t.Errorf("the model received %d prompt tokens, more than 1.25 × the limit %d", received, limit)
	}
	if used > limit {
		t.Errorf("the day's used is %d tokens, past the limit of %d", used, limit)
	}
	if n, _ := ledgerRows(t, conn, "llm", "chat", "unknown"); n == 0 {
		t.Error("the ledger has no llm rows with outcome unknown for the calls that timed out")
	}
	if opened < 1 {
		t.Errorf("no replica's LLM breaker opened against a model that never answered in time (opened_total summed %v)", opened)
	}
	checkLeases(t, conn)
}

// overCountingChatModel is TestChatCostGuard's over-counting model.
func overCountingChatModel(t *testing.T) {
	const maxTurns = 40
	model := llmtest.NewChatServer(t)
	model.SetTokensPerWord(8)
	c := chatCluster(t, model, 10*time.Second)
	charge, limit := calibrate(t, c, 10)
	t.Logf("an answered call is charged %d tokens, as the model reported them; the limit is %d", charge, limit)

	reasons := map[string]int{}
	turns := 0
	for reasons["llm_budget_exhausted"] < 3 {
		if turns++; turns > maxTurns {
			t.Fatalf("the budget was not spent after %d turns: by reason %v", maxTurns, reasons)
		}
		done, _, err := chatTurn(c.URL(), chatQuestion)
		if err != nil {
			t.Fatalf("turn %d: %v", turns, err)
		}
		reasons[done.Reason]++
		if done.Reason == "llm_budget_exhausted" && done.Mode != "retrieval" {
			t.Errorf("turn %d: reason %q in mode %q, want the retrieval-only answer", turns, done.Reason, done.Mode)
		}
	}
	conn := c.DB(t)
	used := waitIdle(t, conn, "llm")
	// What the model counted and reported: the prompt tokens it received, and the answer's
	// for every request (each was answered, with the fake's default "Fake answer.").
	counted := int64(model.ReceivedTokens() + model.Calls()*llm.CountTokens("Fake answer."))
	_, ledgered := ledgerRows(t, conn, "llm", "", "")
	t.Logf("%d turns by reason %v; the model received %d requests and counted %d tokens (bound 1.25 × %d = %d); used %d, the ledger %d",
		turns, reasons, model.Calls(), counted, limit, limit*5/4, used, ledgered)
	t.Logf("llm ledger: %s", ledgerSummary(t, conn, "llm"))
	if used > limit {
		t.Errorf("the day's used is %d tokens, past the limit of %d", used, limit)
	}
	if 4*counted > 5*limit {
		t.Errorf("the model counted %d tokens, more than 1.25 × the limit %d", counted, limit)
	}
	if used != ledgered || ledgered != counted {
		t.Errorf("the day's used is %d tokens, the ledger's rows %d, what the model reported %d: want all three equal", used, ledgered, counted)
	}
	checkLeases(t, conn)
}

// chatDone is the message.done event of a chat turn.
type chatDone struct {
	Mode     string `json:"mode"`
	Reason   string `json:"reason"`
	Kind     string `json:"kind"`
	AnswerID string `json:"answerId"`
	Usage    struct {
		TotalTokens   int `json:"totalTokens"`
		ProviderCalls int `json:"providerCalls"`
	} `json:"usage"`
}

// chatTurn posts question as a chat turn to base and reads the stream to its end, which
// must be message.done; it returns that event and how long the turn took. A stream still
// open after 20 s is an error.
func chatTurn(base, question string) (chatDone, time.Duration, error) {
	return chatTurnWith(httpClient, base, question)
}

// chatTurnWith is chatTurn sent with client (e.g. one that connects from a loopback
// address of its own, a visitor of its own behind the proxy).
func chatTurnWith(client *http.Client, base, question string) (chatDone, time.Duration, error) {
	var done chatDone
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	body, _ := json.Marshal(map[string]any{
		"conversationId": "cluster",
		"messages":       []map[string]string{{"role": "user", "content": question}},
		"consent":        true,
	})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/chat", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return done, time.Since(began), err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		return done, time.Since(began), fmt.Errorf("chat: status %d, %s: %.300s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	events, err := testkit.NewEvents(resp.Body).Rest()
	took := time.Since(began)
	switch {
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		return done, took, fmt.Errorf("the stream was still open after %v: %v", took.Round(time.Millisecond), testkit.EventNames(events))
	case err != nil:
		return done, took, fmt.Errorf("the stream broke: %w; events %v", err, testkit.EventNames(events))
	case len(events) == 0 || events[len(events)-1].Name != "message.done":
		return done, took, fmt.Errorf("the stream did not end with message.done: %v", testkit.EventNames(events))
	}
	if err := json.Unmarshal(events[len(events)-1].Data, &done); err != nil {
		return done, took, fmt.Errorf("message.done: %w", err)
	}
	return done, took, nil
}
