package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// toolSteps are the parts of a tool turn's sample, as the client reads its events:
// first, from sending the turn to reading tool.call, less the model's delay (the first
// model call, its settlement and ledger row, the tool call read from its stream); tool,
// from tool.call to tool.result (search_site in the turn); second, from tool.result to
// the first message.delta, less the model's delay (the second request, built with the
// tool's result, its reservation, and the model's first text).
type toolSteps struct{ first, tool, second time.Duration }

// stepLog collects the steps of the tool turns of a round.
type stepLog struct {
	mu    sync.Mutex
	steps []toolSteps
}

func (l *stepLog) add(s toolSteps) {
	l.mu.Lock()
	l.steps = append(l.steps, s)
	l.mu.Unlock()
}

// take returns the steps collected and starts afresh.
func (l *stepLog) take() []toolSteps {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.steps
	l.steps = nil
	return s
}

// post sends body as JSON to url and returns when it was sent and the response, whose
// status is 200.
func (b *ttftBench) post(ctx context.Context, url string, body []byte) (time.Time, *http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return time.Time{}, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	start := time.Now()
	resp, err := b.client.Do(req)
	if err != nil {
		return start, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return start, nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	return start, resp, nil
}

// turn posts one chat turn and returns the time to its first message.delta; the stream
// must then end with message.done, after a successful search_site call before the
// first text exactly when withTool. A tool turn's steps, as the client sees them, go to
// b.steps.
func (b *ttftBench) turn(ctx context.Context, body []byte, withTool bool) (time.Duration, error) {
	start, resp, err := b.post(ctx, "http://"+b.addr+"/api/chat", body)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	var lat time.Duration
	var before, after []string // event names before and after the first delta
	var at = map[string]time.Duration{}
	failedTool := false
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && line == "" {
				break
			}
			return 0, err
		}
		name, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "event: ")
		if !ok {
			if lat == 0 && len(before) > 0 && strings.HasPrefix(line, "data: ") {
				event := before[len(before)-1]
				if _, seen := at[event]; !seen {
					at[event] = time.Since(start) // the event's data is read
				}
				lat = at["message.delta"]
				if event == "tool.result" {
					failedTool = failedTool || !strings.Contains(line, `"ok":true`)
				}
			}
			continue
		}
		if lat == 0 {
			before = append(before, name)
		} else {
			after = append(after, name)
		}
	}
	if failedTool {
		return 0, errors.New("search_site failed in the chat")
	}
	if err := checkTurn(before, after, withTool); err != nil {
		return 0, err
	}
	if withTool {
		b.steps.add(toolSteps{
			first:  at["tool.call"] - ttftDelay,
			tool:   at["tool.result"] - at["tool.call"],
			second: lat - at["tool.result"] - ttftDelay,
		})
	}
	return lat, nil
}

// checkTurn checks a turn's events: before, up to the first message.delta; after, the
// rest.
func checkTurn(before, after []string, withTool bool) error {
	want := []string{"message.delta"}
	if withTool {
		want = []string{"tool.call", "tool.result", "message.delta"}
	}
	if strings.Join(before, " ") != strings.Join(want, " ") {
		return fmt.Errorf("events before the first text %q, want %q", before, want)
	}
	if len(after) == 0 || after[len(after)-1] != "message.done" || strings.Contains(strings.Join(after, " "), "error") {
		return fmt.Errorf("events after the first text %q: want message.done last and no error", after)
	}
	return nil
}

// fakeAlone posts body, a request as sitetools sends it, to the fake model directly and
// returns the time to the first chunk with text; it reads the rest of the stream.
func (b *ttftBench) fakeAlone(ctx context.Context, body []byte) (time.Duration, error) {
	start, resp, err := b.post(ctx, b.fake.BaseURL()+"/chat/completions", body)
	if err != nil {
		return 0, fmt.Errorf("fake model: %w", err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	var lat time.Duration
	done := false
	for !done {
		line, err := r.ReadString('\n')
		if err != nil {
			return 0, fmt.Errorf("fake model: %w", err)
		}
		data, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "data: ")
		switch {
		case !ok:
		case data == "[DONE]":
			done = true
		case lat == 0:
			var chunk struct {
				Choices []struct{ Delta struct{ Content string } }
			}
			if err := json.Unmarshal([]byte(data), &chunk); err != nil {
				return 0, fmt.Errorf("fake model: %w", err)
			}
			if len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
				lat = time.Since(start)
			}
		}
	}
	if lat == 0 {
		return 0, errors.New("fake model: no text")
	}
	return lat, nil
}
