package cluster_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/internal/testkit"
)

// TestInsightsKeepNoText: two replicas behind nginx with a chat model (the fake). Questions,
// the model's answers, search queries over every channel (the chat, /api/chat/tools,
// /mcp), query strings, feedback and hand-overs all carry unique markers, valid and
// hostile ones alike. The owner's report counts what happened (ratings by kind and
// reason, searches that found nothing, hand-overs offered and called, the pages cited),
// and none of the markers is anywhere: not in a full pg_dump of the database, not in the
// replicas' or nginx's logs, not in the metrics, not in the report (JSON, text,
// Markdown).
func TestInsightsKeepNoText(t *testing.T) {
	t.Parallel()
	m := &markers{}
	question, answer, toolQuery := m.next(), m.next(), m.next()
	model := llmtest.NewChatServer(t)
	model.SetFallback(func(_ int, req llmtest.ChatRequest) llmtest.ChatReply {
		for _, msg := range req.Messages {
			if msg.Role == "tool" {
				// The model quotes the visitor, as models do, and points to the contact page.
				return llmtest.Say(fmt.Sprintf("About %s: %s. See https://example.com/pricing/ or write to us via https://example.com/contact.", question, answer))
			}
		}
		return llmtest.CallTools(llmtest.ToolCallReply{Name: "search_site", Arguments: `{"query":"pricing ` + toolQuery + `"}`})
	})
	c := startCluster(t, 2, map[string]string{
		"LLM_BASE_URL": model.BaseURL(), "LLM_MODEL": "fake-model", "LOG_LEVEL": "debug",
	})

	// The chat: two model answers, rated.
	var ids []string
	for range 2 {
		done, _, err := chatTurn(c.URL(), "What does an audit cost? "+question)
		if err != nil || done.Kind != "model" || done.AnswerID == "" {
			t.Fatalf("chat: %+v, %v", done, err)
		}
		ids = append(ids, done.AnswerID)
	}
	sendFeedback(t, c, m, ids)
	// Searches on the other channels: one that finds its page, one that finds nothing.
	for _, q := range []string{"accessibility audit " + m.next(), m.next() + " " + m.next()} {
		if _, err := searchVia(c.URL(), q); err != nil {
			t.Fatal(err)
		}
		if err := mcpSearch(c.URL(), q); err != nil {
			t.Fatal(err)
		}
	}
	if err := get(c.URL(), "/api/chat/tools?query="+m.next()); err != nil {
		t.Fatal(err)
	}

	// The report, read on each replica (each writes its own counts first).
	var reports []string
	for i := range 2 {
		reports = append(reports, adminGet(t, c.Admin(i), "/admin/report?days=1"))
	}
	checkReport(t, reports[1])
	m.noneIn(t, placesToLook(t, c, reports))
}

// markers are unique words no text of the service holds by chance.
type markers struct{ all []string }

func (m *markers) next() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	s := "qzmark" + hex.EncodeToString(b)
	m.all = append(m.all, s)
	return s
}

// noneIn fails for every marker in one of places (name → text).
func (m *markers) noneIn(t *testing.T, places map[string]string) {
	t.Helper()
	for place, text := range places {
		if len(text) < 100 {
			t.Errorf("%s is %d bytes: nothing to look in", place, len(text))
		}
		for _, mk := range m.all {
			if strings.Contains(strings.ToLower(text), mk) {
				t.Errorf("%s holds the marker %s", place, mk)
			}
		}
	}
	if !strings.Contains(places["pg_dump"], "activity_daily") || !strings.Contains(places["replica 0's log"], `"route":"/api/feedback"`) {
		t.Error("the dump or the log is not what the test means to search")
	}
}

// sendFeedback rates the answers ids through nginx, and sends hostile feedback and
// hand-overs beside, each carrying markers where a client can put text.
func sendFeedback(t *testing.T, c *cluster, m *markers, ids []string) {
	t.Helper()
	feedback := func(id, rating, reason string) string {
		v := map[string]string{"answerId": id, "kind": "model", "rating": rating}
		if reason != "" {
			v["reason"] = reason
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	for _, s := range []struct {
		path, body string
		want       int
		header     []string
	}{
		{"/api/feedback", feedback(ids[0], "down", "outdated"), 204, nil},
		{"/api/feedback", feedback(ids[0], "down", "outdated"), 204, nil}, // replayed: counts nothing
		{"/api/feedback", feedback(ids[1], "up", ""), 204, []string{"User-Agent", m.next(), "Referer", "https://example.com/?q=" + m.next()}},
		{"/api/feedback", feedback(ids[1]+m.next(), "up", ""), 404, nil},              // forged
		{"/api/feedback", feedback(m.next()+"."+m.next(), "down", "wrong"), 404, nil}, // forged
		{"/api/feedback", feedback(ids[1], "down", m.next()), 400, nil},               // a reason of its own
		{"/api/feedback", `{"answerId":"` + ids[1] + `","kind":"model","rating":"down","comment":"` + m.next() + `"}`, 400, nil},
		{"/api/feedback", `{"answerId":"` + ids[1] + `","kind":"` + m.next() + `","rating":"up"}`, 400, nil},
		{"/api/handover", `{"tool":"prefill_contact_form"}`, 204, nil},
		{"/api/handover", `{"tool":"prefill_contact_form","message":"` + m.next() + `"}`, 400, nil},
		{"/api/feedback?q=" + m.next(), feedback(ids[1], "up", ""), 204, nil},
	} {
		req, _ := http.NewRequest(http.MethodPost, c.URL()+s.path, strings.NewReader(s.body))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(s.header); i += 2 {
			req.Header.Set(s.header[i], s.header[i+1])
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != s.want {
			t.Fatalf("POST %s %s: %d, want %d", s.path, s.body, resp.StatusCode, s.want)
		}
	}
}

// checkReport checks the report's counts of what TestInsightsKeepNoText did.
func checkReport(t *testing.T, body string) {
	t.Helper()
	var report struct {
		Answers struct {
			ByKind map[string]int64 `json:"byKind"`
		} `json:"answers"`
		Feedback []struct {
			Kind    string           `json:"kind"`
			Up      int64            `json:"up"`
			Down    int64            `json:"down"`
			Reasons map[string]int64 `json:"reasons"`
		} `json:"feedback"`
		Searches struct {
			ByChannel map[string]struct{ Total, NoResult int64 } `json:"byChannel"`
		} `json:"searches"`
		Handovers struct{ Offered, Called int64 } `json:"handovers"`
		TopPages  []struct {
			URL   string `json:"url"`
			Cited int64  `json:"cited"`
		} `json:"topPages"`
	}
	if err := json.Unmarshal([]byte(body), &report); err != nil {
		t.Fatal(err)
	}
	t.Logf("report: %s", body)
	model := report.Feedback[0]
	// Each answer rated once: the replays of both count nothing.
	if report.Answers.ByKind["model"] != 2 || model.Kind != "model" || model.Up != 1 || model.Down != 1 || model.Reasons["outdated"] != 1 ||
		report.Handovers.Offered != 2 || report.Handovers.Called != 1 {
		t.Errorf("report: answers %v, feedback %+v, hand-overs %+v", report.Answers.ByKind, model, report.Handovers)
	}
	if ch := report.Searches.ByChannel; ch["chat"].Total != 2 || ch["webmcp"].Total != 2 || ch["webmcp"].NoResult != 1 || ch["mcp"].Total != 2 || ch["mcp"].NoResult != 1 {
		t.Errorf("searches by channel %+v", ch)
	}
	if len(report.TopPages) == 0 || report.TopPages[0].Cited != 2 || !strings.Contains(report.TopPages[0].URL, "/pricing") {
		t.Errorf("top pages %+v", report.TopPages)
	}
}

// placesToLook are where the markers must not be: the reports, every replica's metrics
// and log (after it stopped, so that its last words are in), nginx's log, and a full
// dump of the database.
func placesToLook(t *testing.T, c *cluster, reports []string) map[string]string {
	t.Helper()
	places := map[string]string{"report (JSON)": strings.Join(reports, "\n")}
	for _, format := range []string{"text", "markdown"} {
		places["report ("+format+")"] = testkit.Run(t, binary, map[string]string{"DATABASE_URL": c.dbURL}, "report", "--days", "1", "--format", format)
	}
	for i := range c.replicas {
		places[fmt.Sprintf("replica %d's metrics", i)] = adminGet(t, c.Admin(i), "/metrics")
	}
	for i := range c.replicas {
		if err := c.Stop(i); err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
		places[fmt.Sprintf("replica %d's log", i)] = c.replicas[i].proc.Out.String()
	}
	places["nginx's log"] = c.nginx.output()
	places["pg_dump"] = pgDump(t, c.dbURL)
	return places
}

// mcpSearch calls search_site over /mcp.
func mcpSearch(base, query string) error {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call",
		"params": map[string]any{"name": "search_site", "arguments": map[string]any{"query": query}}})
	status, b, err := mcpPost(base, string(body))
	if err != nil || status != http.StatusOK || !bytes.Contains(b, []byte(`"structuredContent"`)) {
		return fmt.Errorf("tools/call: status %d, %v: %.300s", status, err, b)
	}
	return nil
}

// adminGet GETs path on an admin listener and returns the body of its 200.
func adminGet(t *testing.T, admin, path string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, admin+path, nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return string(b)
}

// pgDump is a full plain-text dump of the database at url: schema and every row.
func pgDump(t *testing.T, url string) string {
	t.Helper()
	bin := "pg_dump"
	if found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_dump"); len(found) > 0 {
		bin = found[len(found)-1]
	}
	out, err := exec.Command(bin, "--no-owner", url).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	return string(out)
}
