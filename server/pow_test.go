package server_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-cmp/cmp"

	"github.com/sitetools/sitetools/internal/altcha"
	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/tools"
)

// powEnv is the chat with a model (the fake, which counts every request on arrival) and
// CHAT_PROOF_OF_WORK=mode at the smallest difficulty, so that the test solves fast.
func powEnv(t *testing.T, mode string) *chatEnv {
	t.Helper()
	ce := newChatEnv(t, map[string]string{"CHAT_PROOF_OF_WORK": mode, "CHAT_PROOF_OF_WORK_MAX_NUMBER": "1000"}, true)
	ce.fake.SetFallback(func(int, llmtest.ChatRequest) llmtest.ChatReply { return llmtest.Say("We do audits.") })
	return ce
}

// challengeAnswer is GET /api/chat/challenge's body.
type challengeAnswer struct {
	Required bool `json:"required"`
	altcha.Challenge
}

// challenge gets a challenge: its answer must be a 200 that is never cached.
func (ce *chatEnv) challenge(t *testing.T) challengeAnswer {
	t.Helper()
	r := ce.do(t, http.MethodGet, "/api/chat/challenge", nil, nil)
	if r.status != http.StatusOK || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("GET /api/chat/challenge: status %d, Cache-Control %q: %s", r.status, r.header.Get("Cache-Control"), r.body)
	}
	var c challengeAnswer
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("challenge %s: %v", r.body, err)
	}
	return c
}

// solved gets a challenge and solves it as the widget does: the Altcha header's value.
func (ce *chatEnv) solved(t *testing.T) string {
	t.Helper()
	c := ce.challenge(t)
	if !c.Required {
		t.Fatal("no proof of work required")
	}
	n, ok := altcha.Solve(c.Challenge)
	if !ok {
		t.Fatalf("no number solves %+v", c.Challenge)
	}
	return c.Payload(n)
}

// powTurn sends a chat turn with solution in the Altcha header ("": none) and reads the
// answer whole.
func (ce *chatEnv) powTurn(t *testing.T, solution string) response {
	t.Helper()
	h := map[string]string{"Content-Type": "application/json"}
	if solution != "" {
		h["Altcha"] = solution
	}
	return ce.do(t, http.MethodPost, "/api/chat", strings.NewReader(chatBody(true, "Do you do audits?")), h)
}

// answered checks that r is the model's streamed answer.
func answered(t *testing.T, r response) {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if text := eventText(t, readEvents(t, bytes.NewReader(r.body))); text != "We do audits." {
		t.Fatalf("answer %q", text)
	}
}

// refused checks that r is a 403 with code and a message containing say.
func refused(t *testing.T, r response, code, say string) {
	t.Helper()
	if r.status != http.StatusForbidden {
		t.Fatalf("status %d, want 403 %s: %s", r.status, code, r.body)
	}
	got, msg, _ := r.errorBody(t)
	if got != code || !strings.Contains(msg, say) || !strings.Contains(msg, "/api/chat/challenge") {
		t.Errorf("error %s %q, want %s saying %q and where to get a challenge", got, msg, code, say)
	}
}

// TestProofOfWorkAlways: with CHAT_PROOF_OF_WORK=always, a turn without a solution, with
// a forged one, an expired one or one used before is refused with its code before any
// model call; a solved challenge gets the answer. The owner's report counts each outcome.
func TestProofOfWorkAlways(t *testing.T) {
	ce := powEnv(t, "always")

	c := ce.challenge(t)
	if !c.Required || c.Algorithm != "SHA-256" || c.MaxNumber != 1000 || !strings.Contains(c.Salt, "?expires=") || len(c.Signature) != 64 {
		t.Fatalf("challenge %+v", c)
	}

	// A challenge of another key, solved: what a forger can make.
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	otherKey, _ := altcha.NewKey(secret)
	forged, _ := otherKey.Create(1000, time.Now().Add(time.Minute))
	forgedN, _ := altcha.Solve(forged)
	// A right solution with the signature of the forger's challenge.
	n, _ := altcha.Solve(c.Challenge)
	resigned := c.Challenge
	resigned.Signature = forged.Signature

	for _, tc := range []struct {
		name, solution, code, say string
	}{
		{"no solution", "", "proof_of_work_required", "Altcha header"},
		{"another key's challenge", forged.Payload(forgedN), "proof_of_work_invalid", "not a solved challenge of this site"},
		{"a signature not ours", resigned.Payload(n), "proof_of_work_invalid", "not a solved challenge of this site"},
		{"the wrong number", c.Payload(n + 1), "proof_of_work_invalid", "not a solved challenge of this site"},
		{"not a solution", "yes-i-solved-it", "proof_of_work_invalid", "not a solved challenge of this site"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refused(t, ce.powTurn(t, tc.solution), tc.code, tc.say)
		})
	}

	t.Run("expired", func(t *testing.T) {
		solution := ce.solved(t)
		ce.App.SetProofOfWorkClock(func() time.Time { return time.Now().Add(5*time.Minute + time.Second) })
		defer ce.App.SetProofOfWorkClock(time.Now)
		refused(t, ce.powTurn(t, solution), "proof_of_work_invalid", "expired")
	})

	var solution string
	t.Run("solved", func(t *testing.T) {
		solution = ce.solved(t)
		answered(t, ce.powTurn(t, solution))
	})
	t.Run("replayed", func(t *testing.T) {
		before := ce.fake.Calls()
		refused(t, ce.powTurn(t, solution), "proof_of_work_invalid", "used before")
		if n := ce.fake.Calls() - before; n != 0 {
			t.Errorf("the replayed turn made %d model calls", n)
		}
	})
	if n := ce.fake.Calls(); n != 1 {
		t.Errorf("the model was called %d times, want once: for the solved turn alone", n)
	}

	// issued: the first challenge, the expired one and the solved one.
	wantCounts(t, ce, map[string]int64{"pow/issued": 3, "pow/missing": 1, "pow/invalid": 4, "pow/expired": 1, "pow/solved": 1, "pow/replayed": 1})
}

// wantCounts waits until the owner's report has the fair-use counts want.
func wantCounts(t *testing.T, ce *chatEnv, want map[string]int64) {
	t.Helper()
	got := map[string]int64{}
	deadline := time.Now().Add(5 * time.Second)
	for {
		rows, err := ce.db.Pool.Query(context.Background(), `SELECT detail, n FROM activity_daily WHERE event = 'fair_use' AND detail LIKE 'pow/%'`)
		if err != nil {
			t.Fatal(err)
		}
		got = map[string]int64{}
		for rows.Next() {
			var detail string
			var n int64
			if err := rows.Scan(&detail, &n); err != nil {
				t.Fatal(err)
			}
			got[detail] += n
		}
		rows.Close()
		if maps.Equal(got, want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fair-use counts (-want +got):\n%s", diff)
	}
}

// TestProofOfWorkOff: by default nothing changes: the challenge route says none is
// required, and a turn is answered with or without a header, which is not looked at.
func TestProofOfWorkOff(t *testing.T) {
	ce := powEnv(t, "off")
	if c := ce.challenge(t); c.Required || c.Challenge.Challenge != "" {
		t.Fatalf("challenge %+v", c)
	}
	answered(t, ce.powTurn(t, ""))
	answered(t, ce.powTurn(t, "not-a-solution"))
	wantCounts(t, ce, map[string]int64{})
}

// TestProofOfWorkPressure: with CHAT_PROOF_OF_WORK=pressure a solution is needed only
// while the paced LLM budget runs short, and the challenge route says so at each moment.
func TestProofOfWorkPressure(t *testing.T) {
	ce := powEnv(t, "pressure")
	var pressure atomic.Bool
	ce.App.SetPressure(pressure.Load)

	if c := ce.challenge(t); c.Required {
		t.Fatalf("a proof of work required without pressure: %+v", c)
	}
	answered(t, ce.powTurn(t, ""))

	pressure.Store(true)
	before := ce.fake.Calls()
	refused(t, ce.powTurn(t, ""), "proof_of_work_required", "Altcha header")
	if n := ce.fake.Calls() - before; n != 0 {
		t.Errorf("the refused turn made %d model calls", n)
	}
	answered(t, ce.powTurn(t, ce.solved(t)))

	pressure.Store(false)
	answered(t, ce.powTurn(t, ""))
	if n := ce.fake.Calls(); n != 3 {
		t.Errorf("the model was called %d times, want 3", n)
	}
}

// proofOfWorkCases are the contract's cases of GET /api/chat/challenge and of the chat's
// proof of work: every documented status of the route and the chat's refusals, on a
// server that always asks for a proof of work (retrieval-only, with register's tools),
// one whose database is unreachable, and main, which never asks.
func proofOfWorkCases(t *testing.T, doc *openapi3.T, db *postgres.DB, register func(*tools.Registry) error) []contractCase {
	t.Helper()
	env := map[string]string{"CHAT_PROOF_OF_WORK": "always", "CHAT_PROOF_OF_WORK_MAX_NUMBER": "1000"}
	_, powSrv := startServer(t, db, env, register)
	_, powDownSrv := startServer(t, unreachableDB(t), env, register)
	jsonCT := http.Header{"Content-Type": {"application/json"}}
	chatOK := `{"messages":[{"role":"user","content":"When are you open?"}],"consent":true}`
	allowGet := hasHeader("Allow", "GET")
	var spent string
	solve := func(r *http.Request) {
		r.Header.Set("Altcha", solveFrom(t, powSrv))
		spent = r.Header.Get("Altcha")
	}
	challenge := "/api/chat/challenge"
	return []contractCase{
		{name: "challenge not required", method: "GET", path: challenge, status: 200,
			check: func(t *testing.T, res *http.Response, body []byte) {
				hasHeader("Cache-Control", "no-store")(t, res, body)
				jsonEquals(`{"required":false}`)(t, res, body)
			}},
		{name: "challenge", srv: powSrv, method: "GET", path: challenge, status: 200,
			check: func(t *testing.T, res *http.Response, body []byte) {
				hasHeader("Cache-Control", "no-store")(t, res, body)
				var c challengeAnswer
				mustUnmarshal(t, body, &c)
				if _, ok := altcha.Solve(c.Challenge); !c.Required || c.MaxNumber != 1000 || !ok {
					t.Errorf("challenge %s: not a challenge to solve up to 1000", body)
				}
			}},
		{name: "challenge from an allowed origin", srv: powSrv, method: "GET", path: challenge, header: with(nil, "Origin", partnerOrigin), status: 200,
			check: hasHeader("Access-Control-Allow-Origin", partnerOrigin)},
		{name: "challenge from a disallowed origin", srv: powSrv, method: "GET", path: challenge, header: with(nil, "Origin", evilOrigin), status: 403, code: "origin_not_allowed"},
		{name: "challenge database unavailable", srv: powDownSrv, method: "GET", path: challenge, status: 503, code: "unavailable",
			check: hasHeader("Retry-After", "5")},
		{name: "challenge post", method: "POST", path: challenge, status: 405, code: "method_not_allowed", check: allowGet},
		{name: "challenge put", method: "PUT", path: challenge, status: 405, code: "method_not_allowed", check: allowGet},
		{name: "challenge patch", method: "PATCH", path: challenge, status: 405, code: "method_not_allowed", check: allowGet},
		{name: "challenge delete", method: "DELETE", path: challenge, status: 405, code: "method_not_allowed", check: allowGet},
		{name: "challenge head", method: "HEAD", path: challenge, status: 405,
			check: func(t *testing.T, res *http.Response, body []byte) {
				allowGet(t, res, body)
				noBody(t, res, body)
			}},
		{name: "challenge options without preflight", method: "OPTIONS", path: challenge, status: 405, code: "method_not_allowed", check: allowGet},
		{name: "challenge preflight from an allowed origin", method: "OPTIONS", path: challenge,
			header: with(nil, "Origin", partnerOrigin, "Access-Control-Request-Method", "GET"), status: 204,
			check: hasHeader("Access-Control-Allow-Origin", partnerOrigin)},
		preflight("chat with a proof of work ", "/api/chat", partnerOrigin, "altcha,content-type", "altcha,content-type"),

		{name: "chat turn with a proof of work", srv: powSrv, method: "POST", path: "/api/chat", header: jsonCT,
			body: chatOK, before: solve, status: 200, check: chatStream(doc, retrievalAnswer)},
		{name: "chat without a proof of work", srv: powSrv, method: "POST", path: "/api/chat", header: jsonCT,
			body: chatOK, status: 403, code: "proof_of_work_required"},
		{name: "chat with a proof of work used before", srv: powSrv, method: "POST", path: "/api/chat", header: jsonCT,
			body: chatOK, before: func(r *http.Request) { r.Header.Set("Altcha", spent) }, status: 403, code: "proof_of_work_invalid"},
		{name: "chat with a forged proof of work", srv: powSrv, method: "POST", path: "/api/chat", header: with(jsonCT, "Altcha", "eyJudW1iZXIiOjF9"),
			body: chatOK, status: 403, code: "proof_of_work_invalid"},
		{name: "chat proof of work, database unavailable", srv: powDownSrv, method: "POST", path: "/api/chat", header: with(jsonCT, "Altcha", "eyJudW1iZXIiOjF9"),
			body: chatOK, status: 503, code: "unavailable", check: hasHeader("Retry-After", "5")},
	}
}

// solveFrom gets a challenge of srv and solves it: the Altcha header's value ("" if
// that fails, which the turn's status then shows).
func solveFrom(t *testing.T, srv *httptest.Server) string {
	res, err := srv.Client().Get(srv.URL + "/api/chat/challenge")
	if err != nil {
		t.Errorf("GET /api/chat/challenge: %v", err)
		return ""
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var c challengeAnswer
	if err := json.Unmarshal(b, &c); err != nil {
		t.Errorf("challenge %s: %v", b, err)
		return ""
	}
	n, ok := altcha.Solve(c.Challenge)
	if !ok {
		t.Errorf("challenge %s: no solution", b)
	}
	return c.Payload(n)
}
