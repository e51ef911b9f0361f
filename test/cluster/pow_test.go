package cluster_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/sitetools/sitetools/internal/altcha"
	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/internal/testkit"
)

// TestProofOfWorkAcrossReplicas: three replicas with CHAT_PROOF_OF_WORK=always and a chat
// model (the fake, which counts requests as they arrive). A challenge issued by one
// replica is solved and used on another; the same solution replayed on a third, or on
// the first, is refused with proof_of_work_invalid, as is the same fresh solution sent to
// all three at once but for one; a turn without a solution is refused with
// proof_of_work_required. No refused turn reaches the model.
func TestProofOfWorkAcrossReplicas(t *testing.T) {
	t.Parallel()
	model := llmtest.NewChatServer(t)
	c := startCluster(t, 3, map[string]string{
		"LLM_BASE_URL":                  model.BaseURL(),
		"LLM_MODEL":                     "fake-model",
		"CHAT_PROOF_OF_WORK":            "always",
		"CHAT_PROOF_OF_WORK_MAX_NUMBER": "5000",
	})

	// Issued by replica 2, used on replica 0: the key is shared.
	solution := solveOn(t, c.Replica(2))
	if status, code := powTurn(t, c.Replica(0), solution); status != http.StatusOK {
		t.Fatalf("a solved challenge of replica 2 on replica 0: status %d %s", status, code)
	}
	if n := model.Calls(); n != 1 {
		t.Fatalf("the model was called %d times for one turn", n)
	}

	refusals := []struct {
		name, replica, solution, code string
	}{
		{"replayed on replica 1", c.Replica(1), solution, "proof_of_work_invalid"},
		{"replayed on replica 2, which issued it", c.Replica(2), solution, "proof_of_work_invalid"},
		{"replayed on replica 0, which took it", c.Replica(0), solution, "proof_of_work_invalid"},
		{"replayed through nginx", c.URL(), solution, "proof_of_work_invalid"},
		{"without a solution", c.Replica(1), "", "proof_of_work_required"},
	}
	for _, r := range refusals {
		before := model.Calls()
		status, code := powTurn(t, r.replica, r.solution)
		if status != http.StatusForbidden || code != r.code {
			t.Errorf("%s: status %d %q, want 403 %s", r.name, status, code, r.code)
		}
		if n := model.Calls() - before; n != 0 {
			t.Errorf("%s: %d model calls", r.name, n)
		}
	}

	// One fresh solution sent to every replica at once: one turn is answered.
	fresh := solveOn(t, c.Replica(1))
	before := model.Calls()
	statuses := make([]int, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i], _ = powTurn(t, c.Replica(i), fresh)
		}()
	}
	wg.Wait()
	answered := 0
	for _, s := range statuses {
		if s == http.StatusOK {
			answered++
		} else if s != http.StatusForbidden {
			t.Errorf("status %d", s)
		}
	}
	if answered != 1 || model.Calls()-before != 1 {
		t.Errorf("one solution sent to 3 replicas at once: statuses %v, %d model calls; want one answer and one call", statuses, model.Calls()-before)
	}
}

// solveOn gets a challenge from base and solves it: the Altcha header's value.
func solveOn(t *testing.T, base string) string {
	t.Helper()
	resp, err := httpClient.Get(base + "/api/chat/challenge")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c struct {
		Required bool `json:"required"`
		altcha.Challenge
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || resp.StatusCode != http.StatusOK || !c.Required {
		t.Fatalf("GET %s/api/chat/challenge: status %d, %+v, %v", base, resp.StatusCode, c, err)
	}
	n, ok := altcha.Solve(c.Challenge)
	if !ok {
		t.Fatalf("no number solves %+v", c.Challenge)
	}
	return c.Payload(n)
}

// powTurn sends a chat turn to base with solution in the Altcha header ("": none) and
// reads the answer whole: its status, and the error code of a refusal. An answer's
// stream must end with message.done.
func powTurn(t *testing.T, base, solution string) (int, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"messages": []map[string]string{{"role": "user", "content": chatQuestion}},
		"consent":  true,
	})
	req, _ := http.NewRequest(http.MethodPost, base+"/api/chat", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if solution != "" {
		req.Header.Set("Altcha", solution)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Errorf("POST %s/api/chat: %v", base, err)
		return 0, ""
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		events, err := testkit.NewEvents(resp.Body).Rest()
		if err != nil || len(events) == 0 || events[len(events)-1].Name != "message.done" {
			t.Errorf("POST %s/api/chat: the stream did not end with message.done: %v, %v", base, testkit.EventNames(events), err)
		}
		return resp.StatusCode, ""
	}
	b, _ := io.ReadAll(resp.Body)
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return resp.StatusCode, fmt.Sprintf("not an error body: %.200s", b)
	}
	return resp.StatusCode, e.Error.Code
}
