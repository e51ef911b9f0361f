// Package faults_test puts sitetools under the faults a deployment meets — the database
// stopped under load, a slow or failing embedding provider, a chat model that dies or
// hangs mid-stream, SIGTERM with requests in flight — and asserts what the service does
// about each, within bounded time, on loopback only.
package faults_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/internal/testkit"
	"github.com/sitetools/sitetools/tools/appointments"
)

// binary is the sitetools binary: SITETOOLS_BIN, or built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	if bin := os.Getenv("SITETOOLS_BIN"); bin != "" {
		binary = bin
		os.Exit(m.Run())
	}
	testkit.MainWithBinary(m, "faults", &binary, func(dst string) error {
		build := exec.Command("go", "build", "-trimpath", "-o", dst, ".")
		build.Dir = repoRoot()
		if out, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("go build: %v\n%s", err, out)
		}
		return nil
	})
}

// repoRoot is the repository's root directory.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func demoSite() string { return filepath.Join(repoRoot(), "deploy", "demo", "site") }

func availabilityConfig() string {
	return filepath.Join(repoRoot(), "deploy", "availability.example.yaml")
}

const adminToken = "faults-admin-token-0123456789"

// serviceVars is the environment of a `sitetools serve` with its public listener on a
// free loopback port, no rate limit and the database at dbURL. With admin, its admin
// listener is on a port of its own and it serves the example schedule; without, it has
// no admin listener. The maps in more are added last.
func serviceVars(t *testing.T, dbURL string, admin bool, more ...map[string]string) map[string]string {
	t.Helper()
	vars := map[string]string{
		"DATABASE_URL":          dbURL,
		"LISTEN_ADDR":           testkit.FreeAddr(t),
		"ADMIN_LISTEN_ADDR":     "off",
		"RATE_LIMIT_PER_MINUTE": "0",
	}
	if admin {
		vars["ADMIN_LISTEN_ADDR"] = testkit.FreeAddr(t)
		vars["ADMIN_TOKEN"] = adminToken
		vars["AVAILABILITY_CONFIG"] = availabilityConfig()
	}
	for _, m := range more {
		maps.Copy(vars, m)
	}
	return vars
}

// embeddingVars points the service at the fake embedding provider p, at 64 dimensions.
func embeddingVars(p *llmtest.Server) map[string]string {
	return map[string]string{
		"EMBEDDINGS_PROVIDER":   "openai",
		"EMBEDDINGS_BASE_URL":   p.BaseURL(),
		"EMBEDDINGS_MODEL":      "fake-embedding",
		"EMBEDDINGS_DIMENSIONS": "64",
	}
}

// ingestDemo indexes the demo site into the database of vars.
func ingestDemo(t *testing.T, vars map[string]string) {
	t.Helper()
	testkit.Run(t, binary, vars, "ingest", "--dir", demoSite(), "--base-url", "https://site.example")
}

// serveBinary starts `sitetools serve` with vars and waits until it is ready.
func serveBinary(t *testing.T, vars map[string]string) *testkit.Proc {
	t.Helper()
	p := testkit.Start(t, binary, vars, "serve")
	client := &http.Client{Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	testkit.WaitReady(t, client, "http://"+vars["LISTEN_ADDR"]+"/readyz", p.Alive)
	return p
}

// reply is one HTTP exchange as a client saw it.
type reply struct {
	status  int
	header  http.Header
	body    []byte
	start   time.Time
	latency time.Duration
	err     error // transport failure, deadline, or a body cut short
}

func do(ctx context.Context, client *http.Client, method, url string, body any, header map[string]string) reply {
	r := reply{start: time.Now()}
	defer func() { r.latency = time.Since(r.start) }()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			r.err = err
			return r
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		r.err = err
		return r
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		r.err = err
		r.latency = time.Since(r.start)
		return r
	}
	defer resp.Body.Close()
	r.status, r.header = resp.StatusCode, resp.Header
	r.body, r.err = io.ReadAll(resp.Body)
	r.latency = time.Since(r.start)
	return r
}

func callTool(ctx context.Context, client *http.Client, base, name string, args any) reply {
	return do(ctx, client, http.MethodPost, base+"/api/chat/tools", map[string]any{"name": name, "arguments": args}, nil)
}

// toolResult is the part of a tool call's answer the scenarios look at.
type toolResult struct {
	IsError           bool `json:"isError"`
	StructuredContent struct {
		Results  []json.RawMessage `json:"results"`
		Degraded string            `json:"degraded"`
		Slots    []json.RawMessage `json:"slots"`
	} `json:"structuredContent"`
}

func (r reply) tool() (toolResult, error) {
	var res toolResult
	err := json.Unmarshal(r.body, &res)
	return res, err
}

// errorCode is the code of the one error body shape, "" if the body is not one.
func (r reply) errorCode() string {
	var b struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(r.body, &b)
	return b.Error.Code
}

func (r reply) String() string {
	if r.err != nil {
		return fmt.Sprintf("error after %v: %v", r.latency.Round(time.Millisecond), r.err)
	}
	body := string(r.body)
	if len(body) > 300 {
		body = body[:300] + "…"
	}
	return fmt.Sprintf("%d after %v: %s", r.status, r.latency.Round(time.Millisecond), body)
}

// booking is what POST /admin/bookings takes.
type booking = appointments.NewBooking

func newBooking(n int) booking {
	start := time.Now().UTC().Truncate(time.Hour).AddDate(0, 0, 90).Add(time.Duration(n) * time.Hour)
	return booking{
		Start: start, End: start.Add(45 * time.Minute),
		Title:    fmt.Sprintf("Intro call %d", n),
		Attendee: fmt.Sprintf("visitor-%d@example.com", n),
		Notes:    fmt.Sprintf("notes of booking %d: ü, 漢字, \"quotes\"", n),
	}
}

func postBooking(ctx context.Context, client *http.Client, adminBase, key string, b booking) reply {
	return do(ctx, client, http.MethodPost, adminBase+"/admin/bookings", b, map[string]string{
		"Authorization": "Bearer " + adminToken, "Idempotency-Key": key,
	})
}

// created is POST /admin/bookings' answer.
type created struct {
	Booking  appointments.Booking `json:"booking"`
	Replayed bool                 `json:"replayed"`
}

// sseEvent is one server-sent event of POST /api/chat.
type sseEvent = testkit.Event

// chatStream is an open POST /api/chat response, read event by event.
type chatStream struct {
	resp   *http.Response
	events *testkit.Events
}

func chatBody(question string) map[string]any {
	return map[string]any{
		"conversationId": "faults",
		"messages":       []map[string]string{{"role": "user", "content": question}},
		"consent":        true,
	}
}

// openChat posts a chat turn and returns its stream once the response headers arrived.
func openChat(ctx context.Context, client *http.Client, base, question string) (*chatStream, error) {
	b, _ := json.Marshal(chatBody(question))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/chat", bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("chat: status %d, %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	return &chatStream{resp: resp, events: testkit.NewEvents(resp.Body)}, nil
}

// next returns the next event; io.EOF when the stream ended cleanly.
func (s *chatStream) next() (sseEvent, error) { return s.events.Next() }

// rest reads the stream to its end and returns its events; err is nil only if the
// server closed the stream cleanly.
func (s *chatStream) rest() ([]sseEvent, error) {
	defer s.resp.Body.Close()
	return s.events.Rest()
}

func (s *chatStream) close() { s.resp.Body.Close() }

// text is the answer's text: the message.delta events joined.
func text(events []sseEvent) string {
	t, _ := testkit.AnswerText(events)
	return t
}

func names(events []sseEvent) []string { return testkit.EventNames(events) }

// refused reports whether a new TCP connection to addr is refused.
func refused(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return true
	}
	c.Close()
	return false
}
