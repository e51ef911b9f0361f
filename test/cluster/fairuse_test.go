package cluster_test

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	binenc "encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/llm/llmtest"
)

// TestFairUse: three replicas behind nginx, a chat model (the fake, which counts what it
// receives) and visitors that each connect from a loopback address of their own, so that
// nginx, the trusted proxy, names each by its address. The replicas live through one
// simulated day (a clock file every replica reads).
//
//   - A daily share per client: one visitor looping chat turns as fast as the limits allow
//     makes the model count at most its share; then it gets the retrieval-only answer
//     with reason llm_client_share_spent, and a second visitor still gets model answers.
//   - Pacing: 200 visitors, 50 at each of four points of the day, spend at each point no
//     more than the paced ceiling (burst + (limit − burst) × t / 24 h), counted by the
//     model; the rest get llm_budget_paced. /admin/usage and the metrics show the ceiling.
//   - The owner's report counts the shares reached and the paced refusals.
//   - Privacy: a dump of the database names none of the visitors' addresses in any textual
//     form, nor the secret their keys are hashed with; no answer sets a cookie.
func TestFairUse(t *testing.T) {
	t.Parallel()
	r := startFairUse(t)
	r.oneVisitorsShare()
	for k, at := range []time.Duration{3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 18 * time.Hour} {
		r.pacedAt(k, at)
	}
	r.ownerSeesIt()
	r.nothingOfAddresses()
}

// fairUseSecret is the replicas' CLIENT_KEY_SECRET in TestFairUse.
const fairUseSecret = "fair-use-client-key-secret-0123456789abcdef"

// fairUseRun is TestFairUse's cluster, model and figures.
type fairUseRun struct {
	t        *testing.T
	c        *cluster
	conn     *pgx.Conn
	model    *llmtest.ChatServer
	clock    string
	midnight time.Time
	cookies  *cookieWatch
	// turn is what the model counts for one turn; reservation about what a turn
	// reserves; base what the model counted before the day.
	turn, reservation, base int64
	limit, share, burst     int64
	paced                   int // turns the paced ceiling refused
}

// startFairUse starts the cluster on the day before, measures a turn, and restarts the
// replicas on the day at 02:00 with the day's limit at 150 turns, one visitor's share
// at three reservations, and a tenth of the day free at midnight.
func startFairUse(t *testing.T) *fairUseRun {
	r := &fairUseRun{t: t, clock: filepath.Join(t.TempDir(), "clock"), midnight: time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC),
		model: llmtest.NewChatServer(t), cookies: &cookieWatch{}}
	r.setClock(r.midnight.Add(-12 * time.Hour))
	r.c = startCluster(t, 3, map[string]string{
		"LLM_BASE_URL":              r.model.BaseURL(),
		"LLM_MODEL":                 "fake-model",
		"LLM_DAILY_TOKEN_BUDGET":    strconv.Itoa(1 << 40),
		"RATE_LIMIT_PER_MINUTE":     "60",
		"CLIENT_KEY_SECRET":         fairUseSecret,
		"SITETOOLS_TEST_CLOCK_FILE": r.clock,
	})
	if done, _, err := chatTurnWith(visitor("127.0.9.1", r.cookies), r.c.URL(), chatQuestion); err != nil || done.Mode != "llm" {
		t.Fatalf("calibration turn: %+v, %v", done, err)
	}
	r.conn = r.c.DB(t)
	waitIdle(t, r.conn, "llm")
	_, r.turn = ledgerRows(t, r.conn, "llm", "", "")
	r.base = modelCount(r.model)
	// A turn reserves about a quarter more than its prompt and the most an answer may
	// take (1024 tokens), and is charged what the model counted.
	r.reservation = 5*r.turn/4 + 1024
	r.limit, r.share = 150*r.turn, 3*r.reservation
	r.burst = r.limit / 10
	r.setClock(r.midnight.Add(2 * time.Hour))
	r.c.RestartWith(map[string]string{
		"LLM_DAILY_TOKEN_BUDGET": strconv.FormatInt(r.limit, 10),
		"LLM_CLIENT_DAILY_SHARE": strconv.FormatInt(r.share, 10),
		"BUDGET_PACING":          "on",
		"BUDGET_PACING_BURST":    "10%",
	})
	t.Logf("a turn costs %d tokens; the day's limit is %d, a visitor's share %d, the burst %d", r.turn, r.limit, r.share, r.burst)
	return r
}

// setClock sets the replicas' clock; each reads the file whole.
func (r *fairUseRun) setClock(at time.Time) {
	r.t.Helper()
	if err := os.WriteFile(r.clock+".tmp", []byte(at.Format(time.RFC3339Nano)), 0o600); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Rename(r.clock+".tmp", r.clock); err != nil {
		r.t.Fatal(err)
	}
}

// ceiling is the paced ceiling at: burst + (limit − burst) × t / 24 h.
func (r *fairUseRun) ceiling(at time.Time) int64 {
	return r.burst + int64(float64(r.limit-r.burst)*at.Sub(r.midnight).Seconds()/86400)
}

// oneVisitorsShare: one visitor, four turns at once (the per-client cap), as long as it
// gets model answers and three more after its share is spent; then another visitor.
func (r *fairUseRun) oneVisitorsShare() {
	t := r.t
	alice := visitor("127.0.2.1", r.cookies)
	before := modelCount(r.model)
	var spentAnswers, modelAnswers, limited, attempts atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for spentAnswers.Load() < 3 && attempts.Add(1) <= 60 {
				done, _, err := chatTurnWith(alice, r.c.URL(), chatQuestion)
				switch {
				case err != nil && strings.Contains(err.Error(), "status 429"):
					limited.Add(1)
				case err != nil:
					t.Errorf("alice: %v", err)
					return
				case done.Mode == "llm":
					modelAnswers.Add(1)
				case done.Reason == "llm_client_share_spent":
					spentAnswers.Add(1)
				default:
					t.Errorf("alice's turn ended %q/%q, want a model answer or llm_client_share_spent", done.Mode, done.Reason)
				}
			}
		}()
	}
	wg.Wait()
	waitIdle(t, r.conn, "llm")
	count := modelCount(r.model) - before
	t.Logf("alice: %d model answers, %d retrieval-only for her spent share, %d refused by the rate limit; the model counted %d tokens for her (share %d)",
		modelAnswers.Load(), spentAnswers.Load(), limited.Load(), count, r.share)
	if spentAnswers.Load() < 3 {
		t.Fatalf("alice never got llm_client_share_spent in 60 turns")
	}
	if count > r.share {
		t.Errorf("the model counted %d tokens for one visitor, more than its share %d", count, r.share)
	}
	if modelAnswers.Load() < 3 {
		t.Errorf("alice got %d model answers before her share was spent, want at least the 3 it holds at once", modelAnswers.Load())
	}
	if done, _, err := chatTurnWith(visitor("127.0.2.2", r.cookies), r.c.URL(), chatQuestion); err != nil || done.Mode != "llm" {
		t.Fatalf("a second visitor after alice's share was spent: %+v, %v; want a model answer", done, err)
	}
}

// pacedAt is the k-th point of the day, at: 50 new visitors, 20 at a time, then one
// visitor after another until one is paced. What the model counted of the day stays
// within the paced ceiling, and less than three reservations below it.
func (r *fairUseRun) pacedAt(k int, at time.Duration) {
	t := r.t
	now := r.midnight.Add(at)
	r.setClock(now)
	reasons := r.burstOf(k, at)
	waitIdle(t, r.conn, "llm")
	spent := modelCount(r.model) - r.base
	t.Logf("at %s: by outcome %v; the model counted %d tokens of the day, the paced ceiling is %d", at, reasons, spent, r.ceiling(now))
	if spent > r.ceiling(now) {
		t.Errorf("at %s the model counted %d tokens of the day, more than the paced ceiling %d", at, spent, r.ceiling(now))
	}
	if reasons["retrieval/llm_budget_paced"] == 0 {
		t.Errorf("at %s no turn was paced although 50 asked for more than the ceiling released", at)
	}
	r.paced += reasons["retrieval/llm_budget_paced"]
	// Turns in flight hold their reservation until they settle at the model's count,
	// and each replica's lease keeps about a second of its demand, so the last refusals
	// of a burst may leave room unspent. One visitor at a time, each once the replicas
	// have given their leases back, then uses it, until the room left is less than the
	// refused turn's reservation.
	for i := range 20 {
		done, _, err := chatTurnWith(visitor(fmt.Sprintf("127.0.3.%d", k*20+i+1), r.cookies), r.c.URL(), chatQuestion)
		if err != nil {
			t.Fatalf("a visitor after the burst at %s: %v", at, err)
		}
		waitIdle(t, r.conn, "llm")
		if done.Reason == "llm_budget_paced" {
			break
		}
	}
	spent = modelCount(r.model) - r.base
	t.Logf("at %s, after one visitor at a time: the model counted %d tokens of the day", at, spent)
	if spent > r.ceiling(now) || spent < r.ceiling(now)-2*r.reservation {
		t.Errorf("at %s, after one visitor at a time, the model counted %d tokens of the day; want up to the paced ceiling %d, less than two reservations (%d) below it",
			at, spent, r.ceiling(now), 2*r.reservation)
	}
	if u := budgetOf(t, r.c.Admin(k%3), "llm"); u.PacedCeiling != r.ceiling(now) || !u.Pacing {
		t.Errorf("at %s /admin/usage says the paced ceiling is %d (pacing %v), want %d", at, u.PacedCeiling, u.Pacing, r.ceiling(now))
	}
	if got := metric(t, r.c.Admin(k%3), "sitetools_budget_paced_ceiling_tokens", map[string]string{"kind": "llm"}); int64(got) != r.ceiling(now) {
		t.Errorf("at %s the metric says the paced ceiling is %v, want %d", at, got, r.ceiling(now))
	}
}

// burstOf sends the k-th 50 of the 200 visitors' turns, 20 at a time, and returns their
// outcomes by mode/reason.
func (r *fairUseRun) burstOf(k int, at time.Duration) map[string]int {
	reasons := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan int)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				done, _, err := chatTurnWith(visitor(fmt.Sprintf("127.0.1.%d", k*50+i+1), r.cookies), r.c.URL(), chatQuestion)
				mu.Lock()
				if err != nil {
					r.t.Errorf("visitor %d at %s: %v", k*50+i+1, at, err)
				}
				reasons[done.Mode+"/"+done.Reason]++
				mu.Unlock()
			}
		}()
	}
	for i := range 50 {
		next <- i
	}
	close(next)
	wg.Wait()
	return reasons
}

// ownerSeesIt: the owner's report counts alice's share and the paced turns; the usage
// report the one visitor at its share.
func (r *fairUseRun) ownerSeesIt() {
	waitFor(r.t, 10*time.Second, "the owner's report counts alice's share and the paced turns", func() bool {
		rep := insightsReport(r.t, r.c.Admin(0))
		return rep.FairUse.SharesReached["llm"] == 1 && rep.FairUse.Paced["llm"] >= int64(r.paced)
	})
	if u := budgetOf(r.t, r.c.Admin(1), "llm"); u.ClientsAtShare != 1 {
		r.t.Errorf("/admin/usage counts %d visitors at their share today, want 1 (alice)", u.ClientsAtShare)
	}
}

// nothingOfAddresses: a dump of the database holds none of the visitors' addresses in
// any form, nor the secret their keys are hashed with; no answer set a cookie.
func (r *fairUseRun) nothingOfAddresses() {
	t := r.t
	var addrs []string
	for i := 1; i <= 200; i++ {
		addrs = append(addrs, fmt.Sprintf("127.0.1.%d", i))
	}
	for i := 1; i <= 80; i++ {
		addrs = append(addrs, fmt.Sprintf("127.0.3.%d", i))
	}
	addrs = append(addrs, "127.0.2.1", "127.0.2.2", "127.0.9.1")
	dump := pgDump(t, r.c.dbURL)
	var rows int
	if err := r.conn.QueryRow(t.Context(), `SELECT count(*) FROM client_shares`).Scan(&rows); err != nil || rows < 200 {
		t.Fatalf("client_shares has %d rows (%v): the dump would prove nothing", rows, err)
	}
	for _, a := range addrs {
		for form, re := range addressForms(a) {
			if loc := re.FindStringIndex(dump); loc != nil {
				t.Errorf("the database dump holds visitor address %s as %s: …%s…", a, form, dump[max(loc[0]-60, 0):min(loc[1]+60, len(dump))])
			}
		}
	}
	for _, s := range []string{fairUseSecret, hex.EncodeToString([]byte(fairUseSecret))} {
		if strings.Contains(dump, s) {
			t.Errorf("the database dump holds the client key secret")
		}
	}
	if n := r.cookies.seen.Load(); n > 0 {
		t.Errorf("%d answers set a cookie", n)
	}
	checkLeases(t, r.conn)
}

// TestFairUseSearch: the embedding budget's share. One visitor sending distinct searches
// (each a paid embedding) over three replicas makes the embedding provider count at most
// its share; its searches then answer from full-text only with degraded
// embedding_client_share_spent, while another visitor's search still gets its vector.
func TestFairUseSearch(t *testing.T) {
	t.Parallel()
	const share = 200
	c := startCluster(t, 3, map[string]string{
		"EMBEDDINGS_DAILY_TOKEN_BUDGET": "1000000",
		"EMBEDDINGS_CLIENT_DAILY_SHARE": strconv.Itoa(share),
		"CLIENT_KEY_SECRET":             "fair-use-search-secret-0123456789abcdef",
	})
	cookies := &cookieWatch{}
	carol := visitor("127.0.4.1", cookies)
	before := c.Provider().ReceivedTokens()
	queries := distinctQueries("carol", 80)
	spent, served := 0, 0
	for _, q := range queries {
		degraded, err := searchWith(carol, c.URL(), q)
		if err != nil {
			t.Fatal(err)
		}
		switch degraded {
		case "":
			served++
		case "embedding_client_share_spent":
			spent++
		default:
			t.Fatalf("carol's search degraded %q, want a full answer or embedding_client_share_spent", degraded)
		}
		if spent == 3 {
			break
		}
	}
	carolCount := c.Provider().ReceivedTokens() - before
	t.Logf("carol: %d searches with their vector, then %d from full-text only; the provider counted %d tokens for her (share %d)", served, spent, carolCount, share)
	if spent < 3 || served < 2 {
		t.Fatalf("carol had %d searches served and %d refused by her share of %d tokens", served, spent, share)
	}
	if carolCount > share {
		t.Errorf("the embedding provider counted %d tokens for one visitor, more than its share %d", carolCount, share)
	}
	if degraded, err := searchWith(visitor("127.0.4.2", cookies), c.URL(), "dave asks about accessibility audits for shops"); err != nil || degraded != "" {
		t.Fatalf("another visitor's search: degraded %q, %v; want its vector", degraded, err)
	}
	if n := cookies.seen.Load(); n > 0 {
		t.Errorf("%d answers set a cookie", n)
	}
}

// modelCount is what the fake chat model counted and would bill: the prompt tokens it
// received and the answer's tokens for every request (each was answered with the fake's
// default text).
func modelCount(m *llmtest.ChatServer) int64 {
	return int64(m.ReceivedTokens() + m.Calls()*llm.CountTokens("Fake answer."))
}

// cookieWatch counts answers that set a cookie.
type cookieWatch struct{ seen atomic.Int64 }

// visitor is an HTTP client that connects from ip, a loopback address of its own: behind
// nginx (which names the client by its address in X-Forwarded-For) it is a visitor of its
// own. Answers that set a cookie are counted in w.
func visitor(ip string, w *cookieWatch) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: 4, IdleConnTimeout: 5 * time.Second}
	return &http.Client{Timeout: 20 * time.Second, Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := tr.RoundTrip(r)
		if err == nil && len(resp.Header.Values("Set-Cookie")) > 0 {
			w.seen.Add(1)
		}
		return resp, err
	})}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// addressForms are the ways an IPv4 address could be written into a database: dotted
// (also inside ::ffff:…), its four bytes in hex (bytea, inet's binary), as one number, in
// base64, and unkeyed hashes of its text, which anyone could recompute for every address.
func addressForms(a string) map[string]*regexp.Regexp {
	ip := net.ParseIP(a).To4()
	n := binenc.BigEndian.Uint32(ip)
	sha := sha256.Sum256([]byte(a))
	md := md5.Sum([]byte(a))
	word := func(s string) *regexp.Regexp {
		return regexp.MustCompile(`(?i)(^|[^0-9a-z.])` + regexp.QuoteMeta(s) + `($|[^0-9a-z])`)
	}
	return map[string]*regexp.Regexp{
		"dotted":       word(a),
		"hex bytes":    regexp.MustCompile(`(?i)` + hex.EncodeToString(ip)),
		"number":       word(strconv.FormatUint(uint64(n), 10)),
		"base64":       regexp.MustCompile(regexp.QuoteMeta(base64.StdEncoding.EncodeToString(ip))),
		"sha-256 text": regexp.MustCompile(`(?i)` + hex.EncodeToString(sha[:16])),
		"md5 text":     regexp.MustCompile(`(?i)` + hex.EncodeToString(md[:])),
	}
}

// fairUseReport is the fair-use part of the owner's report (GET /admin/report).
type fairUseReport struct {
	FairUse struct {
		SharesReached map[string]int64 `json:"sharesReached"`
		Paced         map[string]int64 `json:"paced"`
		ProofOfWork   map[string]int64 `json:"proofOfWork"`
	} `json:"fairUse"`
}

func insightsReport(t *testing.T, admin string) fairUseReport {
	t.Helper()
	var r fairUseReport
	if err := json.Unmarshal([]byte(adminGet(t, admin, "/admin/report?days=1")), &r); err != nil {
		t.Fatalf("report: %v", err)
	}
	return r
}

// budgetUsage is one budget of the usage report, with its fair-use figures.
type budgetUsage struct {
	Kind           string `json:"kind"`
	Limit          int64  `json:"limit"`
	Used           int64  `json:"used"`
	PacedCeiling   int64  `json:"pacedCeiling"`
	Pacing         bool   `json:"pacing"`
	ClientShare    int64  `json:"clientShare"`
	ClientsAtShare int64  `json:"clientsAtShare"`
}

// budgetOf reads the budget of kind in the usage report of the admin listener admin.
func budgetOf(t *testing.T, admin, kind string) budgetUsage {
	t.Helper()
	var r struct {
		Budgets []budgetUsage `json:"budgets"`
	}
	if err := json.Unmarshal([]byte(adminGet(t, admin, "/admin/usage?days=1")), &r); err != nil {
		t.Fatalf("usage: %v", err)
	}
	for _, b := range r.Budgets {
		if b.Kind == kind {
			return b
		}
	}
	t.Fatalf("the usage report has no %s budget", kind)
	return budgetUsage{}
}
