package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sitetools/sitetools/internal/app"
	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/tools"
)

// The chat's time to first token: what sitetools adds between a visitor's POST
// /api/chat and the first message.delta they read, with a fake model whose first chunk
// always comes ttftDelay after its request.
const (
	ttftName  = "Chat time to first token (POST /api/chat, fake model)"
	ttftDelay = 50 * time.Millisecond
	// ttftMinSamples is the fewest turns of one kind a round measures, however short
	// -duration is, so that a p99 rests on a few hundred samples over the rounds;
	// ttftMaxSamples is the most, however long it is, so that the highest concurrency
	// ends its rounds early rather than lengthen the run.
	ttftMinSamples = 80
	ttftMaxSamples = 1000
	// ttftPlain is the question the model answers at once; searchQuery is the one it
	// looks up first.
	ttftPlain  = "Hello! Who are you?"
	ttftAnswer = "Reciprocal rank fusion merges both rankings, as the page on hybrid search explains."
	// The goals: the overhead of a turn without tools, and what the tool round may add
	// beyond search_site itself.
	ttftPlainGoal = 5 * time.Millisecond
	ttftToolSlack = 2 * time.Millisecond
)

// ttftConcurrency is the concurrent turns of each measurement (closed loop). The goals
// are judged up to ttftJudgedUpTo concurrent turns; above, the figures are reported
// without a goal.
var ttftConcurrency = [...]int{1, 16, 64}

const ttftJudgedUpTo = 16

// maxConcurrentChats is the service's CHAT_MAX_CONCURRENT here: room for every turn,
// and for turns whose client has read the end while the service is still closing them.
const maxConcurrentChats = 2 * 64

// ttftDailyBudget is the service's EMBEDDINGS_DAILY_TOKEN_BUDGET and
// LLM_DAILY_TOKEN_BUDGET: finite, so that every model call and every uncached query
// reserves and settles against a limited budget, as in production, and too large for
// the run to exhaust.
const ttftDailyBudget = 1_000_000_000

// A ttftKind is one thing measured: a chat turn of either shape, or a baseline:
// search_site called alone, at a tool turn's pace or back to back, and the fake model
// called directly.
type ttftKind int

const (
	kindPlain ttftKind = iota
	kindTool
	kindSearch
	kindSearchLoop
	kindFake
	ttftKinds
)

func (k ttftKind) String() string {
	return [...]string{"no tool round", "one tool round", "search_site alone", "search_site back to back", "fake model alone"}[k]
}

// delays is how many times the fake model's first-token delay a sample of k includes.
func (k ttftKind) delays() time.Duration {
	return [...]time.Duration{1, 2, 0, 0, 1}[k]
}

// pause is what a worker waits, unmeasured, before each sample of k: search_site alone
// comes at the pace it has in a tool turn, after two model calls. (Back to back, with
// nothing between the calls to wait for, it is much faster than the same call after a
// pause, in a turn or not: kindSearchLoop shows by how much.)
func (k ttftKind) pause() time.Duration {
	if k == kindSearch {
		return 2 * ttftDelay
	}
	return 0
}

// ttftBench is the chat service under measurement and its fake model.
type ttftBench struct {
	fake   *llmtest.ChatServer
	svc    *app.Service
	srv    *http.Server
	addr   string
	client *http.Client
	// plainBody is a request sitetools sent the model for a turn without tools: the
	// fake-model baseline sends it directly.
	plainBody atomic.Pointer[[]byte]
	search    json.RawMessage // search_site's arguments, as the fake model asks for them
	steps     stepLog         // the steps of the tool turns measured since the last take
}

func runTTFT(ctx context.Context, env sectionEnv) (sectionResult, error) {
	b, err := startTTFT(ctx, env)
	if err != nil {
		return sectionResult{}, err
	}
	defer b.close()
	for k := range ttftKinds {
		if _, err := b.once(ctx, k); err != nil {
			return sectionResult{}, fmt.Errorf("%s: %w", k, err)
		}
	}
	if env.s.warmup > 0 {
		for k := range ttftKinds {
			if _, err := b.closedLoop(ctx, k, ttftConcurrency[len(ttftConcurrency)-1], env.s.warmup, 0, ttftMaxSamples); err != nil {
				return sectionResult{}, fmt.Errorf("warm-up, %s: %w", k, err)
			}
		}
	}
	cells, err := b.rounds(ctx, env)
	if err != nil {
		return sectionResult{}, err
	}
	return ttftReport(cells, b.svc.Config.DatabaseMaxConns), nil
}

// startTTFT starts the fake model and the service, built by app.Build from the bench's
// configuration with LLM_BASE_URL pointing at the fake, on the bench's database.
func startTTFT(ctx context.Context, env sectionEnv) (*ttftBench, error) {
	args, err := json.Marshal(map[string]any{"query": searchQuery, "limit": searchLimit})
	if err != nil {
		return nil, err
	}
	b := &ttftBench{fake: llmtest.StartChatServer(), search: args}
	b.fake.DiscardRequests()
	b.fake.SetFallback(b.reply)
	cfg := env.svc.cfg
	cfg.Chat.LLMBaseURL, cfg.Chat.LLMModel = b.fake.BaseURL(), "fake-model"
	cfg.Chat.MaxConcurrent = maxConcurrentChats
	cfg.Chat.DailyTokenBudget, cfg.Embeddings.DailyTokenBudget = ttftDailyBudget, ttftDailyBudget
	cfg.ToolMaxConcurrent = max(cfg.ToolMaxConcurrent, maxConcurrentChats)
	logger := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	b.svc, err = app.Build(ctx, cfg, app.Options{DB: env.svc.db, Logger: logger, Register: registerTools})
	if err != nil {
		b.fake.Close()
		return nil, err
	}
	label := ""
	if env.s.cpuprofile != "" {
		label = "sitetools"
	}
	if b.srv, b.addr, err = serve(b.svc.HTTP.Handler(), label); err != nil {
		b.svc.Close()
		b.fake.Close()
		return nil, err
	}
	n := 4 * ttftConcurrency[len(ttftConcurrency)-1]
	b.client = &http.Client{Transport: &http.Transport{MaxIdleConns: n, MaxIdleConnsPerHost: n, DisableCompression: true}}
	return b, nil
}

func (b *ttftBench) close() {
	b.client.CloseIdleConnections()
	shutdown(b.srv)
	b.svc.Close()
	b.fake.Close()
}

// reply is the fake model: search_site first when the visitor asks searchQuery, then
// (or at once, for any other question) a short text; each after ttftDelay.
func (b *ttftBench) reply(_ int, req llmtest.ChatRequest) llmtest.ChatReply {
	reply := llmtest.Say(ttftAnswer)
	toolResult, asked := false, ""
	for _, m := range req.Messages {
		switch m.Role {
		case "tool":
			toolResult = true
		case "user":
			asked = m.Content
		}
	}
	switch {
	case !toolResult && strings.Contains(asked, searchQuery):
		reply = llmtest.CallTools(llmtest.ToolCallReply{Name: "search_site", Arguments: string(b.search)})
	case !toolResult && b.plainBody.Load() == nil:
		body := bytes.Clone(req.Body)
		b.plainBody.Store(&body)
	}
	reply.FirstDelay = ttftDelay
	return reply
}

// A ttftCell is what was measured of one kind at one concurrency: every sample, and
// each round's median.
type ttftCell struct {
	samples, roundP50s []time.Duration
	steps              []toolSteps // of a tool turn's samples
	// connWait is the time the service waited for a connection of its database pool
	// (pgxpool's AcquireDuration) during the rounds, over acquires acquisitions.
	connWait time.Duration
	acquires int64
}

type ttftCells [len(ttftConcurrency)][ttftKinds]ttftCell

// rounds measures every kind at every concurrency, s.rounds times, interleaved: one
// round of each kind after the other, in an order that turns from round to round.
func (b *ttftBench) rounds(ctx context.Context, env sectionEnv) (*ttftCells, error) {
	out := new(ttftCells)
	for i := range env.s.rounds {
		for ci, c := range ttftConcurrency {
			for j := range ttftKinds {
				k := (ttftKind(i) + j) % ttftKinds
				runtime.GC()
				b.steps.take()
				pool := b.svc.DB.Pool.Stat()
				got, err := b.closedLoop(ctx, k, c, env.s.duration, ttftMinSamples, ttftMaxSamples)
				if err != nil {
					return out, fmt.Errorf("%s, %d concurrent: %w", k, c, err)
				}
				cell := &out[ci][k]
				after := b.svc.DB.Pool.Stat()
				cell.connWait += after.AcquireDuration() - pool.AcquireDuration()
				cell.acquires += after.AcquireCount() - pool.AcquireCount()
				cell.samples = append(cell.samples, got...)
				cell.steps = append(cell.steps, b.steps.take()...)
				p50 := percentile(sortedDurations(got), 50)
				cell.roundP50s = append(cell.roundP50s, p50)
				fmt.Fprintf(env.stderr, "%s: round %d/%d, %2d concurrent, %-24s %5d samples, p50 %s\n",
					ttftName, i+1, env.s.rounds, c, k, len(got), duration(p50))
			}
		}
	}
	return out, nil
}

// closedLoop runs c workers that each measure one k after the other, until d has passed
// and at least min samples are in, or max samples are, and returns the samples (each
// less k's delays).
func (b *ttftBench) closedLoop(ctx context.Context, k ttftKind, c int, d time.Duration, min, max int) ([]time.Duration, error) {
	deadline := time.Now().Add(d)
	var (
		mu       sync.Mutex
		out      []time.Duration
		firstErr error
		n        atomic.Int64
		wg       sync.WaitGroup
	)
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && n.Load() < int64(max) && (time.Now().Before(deadline) || n.Load() < int64(min)) {
				if !pause(ctx, k.pause()) {
					break
				}
				lat, err := b.once(ctx, k)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				out = append(out, lat-k.delays()*ttftDelay)
				mu.Unlock()
				if err != nil {
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return out, firstErr
}

// pause waits d; false means ctx ended first.
func pause(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// once measures one k: a chat turn from sending the request to reading its first
// message.delta (then reads the rest and checks the turn), search_site called through
// the registry on the chat channel, or the fake model alone up to its first text.
func (b *ttftBench) once(ctx context.Context, k ttftKind) (time.Duration, error) {
	switch k {
	case kindSearch, kindSearchLoop:
		ctx := tools.WithRequest(ctx, tools.Request{Channel: tools.ChannelChat, Client: "bench"})
		start := time.Now()
		res, err := b.svc.HTTP.Registry().Call(ctx, "search_site", b.search)
		lat := time.Since(start)
		if err == nil && res.IsError {
			err = errors.New("search_site answered with an error result")
		}
		return lat, err
	case kindFake:
		body := b.plainBody.Load()
		if body == nil {
			return 0, errors.New("no request of a turn without tools reached the fake model")
		}
		return b.fakeAlone(ctx, *body)
	}
	question := ttftPlain
	if k == kindTool {
		question = searchQuery
	}
	body, err := json.Marshal(map[string]any{"conversationId": "bench", "consent": true,
		"messages": []map[string]string{{"role": "user", "content": question}}})
	if err != nil {
		return 0, err
	}
	return b.turn(ctx, body, k == kindTool)
}
