package sitesearch_test

import (
	"context"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/budget"
	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// ledgerTotals are the ingest's ledger rows by outcome: how many, and their tokens.
type ledgerTotals map[string]struct{ rows, tokens int }

func ingestLedger(t *testing.T, db *postgres.DB) ledgerTotals {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(),
		`SELECT outcome, count(*), coalesce(sum(tokens), 0) FROM ledger WHERE channel = 'ingest' GROUP BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := ledgerTotals{}
	for rows.Next() {
		var outcome string
		var n, tokens int
		if err := rows.Scan(&outcome, &n, &tokens); err != nil {
			t.Fatal(err)
		}
		out[outcome] = struct{ rows, tokens int }{n, tokens}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func (l ledgerTotals) tokens() int {
	n := 0
	for _, o := range l {
		n += o.tokens
	}
	return n
}

// slowIngester is an ingester of batches of 16 chunks through a fake provider on a CPU
// that takes perInput an input and finishes every request it received, whether the
// client still waits or not (as Ollama does), with an attempt deadline of timeout.
func slowIngester(t *testing.T, db *postgres.DB, perInput, timeout time.Duration) (*llmtest.Server, *sitesearch.Ingester) {
	t.Helper()
	fake := llmtest.NewServer(t, 384)
	fake.SetCPU(perInput, 0)
	fake.SetKeepComputing(true)
	embedder, err := llm.NewOpenAI(llm.OpenAIOptions{BaseURL: fake.BaseURL(), Model: "fake-embed", Dimensions: 384,
		Timeout: timeout, BatchSize: 16, BaseBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return fake, &sitesearch.Ingester{Index: postgres.NewSiteIndex(db, 384), Embedder: embedder,
		Ledger: budget.NewLedger(db.Pool), BatchSize: 16}
}

// TestIngestChargesRequestsGivenUpOn: against a model server on a CPU, a batch of 16
// chunks takes longer than the attempt's deadline; the client gives up on it and sends
// its chunks again in smaller requests, while the server computes the abandoned one to
// its end. Every request that reached the provider is on the ledger: the answered ones
// at what the provider reported, each one given up on as a row of unknown delivery at
// its estimate × the ratio the run's answers show × budget.RatioMargin. So the ledger
// holds at least what the provider computed, and at most the margin over what it
// received; the ingest still stores every page.
func TestIngestChargesRequestsGivenUpOn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		perWord int // the provider's tokens a word; 0: as sitetools counts
	}{
		{name: "provider counts as sitetools does"},
		{name: "provider counts 2 tokens a word", perWord: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := pgtest.NewDB(t)
			// 16 inputs take 320 ms, past the 200 ms deadline; 4 take 80 ms.
			fake, in := slowIngester(t, db, 20*time.Millisecond, 200*time.Millisecond)
			fake.SetTokensPerWord(tc.perWord)
			st, err := in.Sync(context.Background(), "dir:demo", walkDemo)
			if err != nil {
				if !llm.IsUnavailable(err) {
					t.Fatalf("the ingest failed with %v, which does not say the provider was too slow", err)
				}
				t.Logf("the ingest failed: %v", err)
			} else {
				var pages int
				if err := db.Pool.QueryRow(context.Background(), `SELECT count(*) FROM pages`).Scan(&pages); err != nil || pages != st.Pages {
					t.Fatalf("%d pages stored of %d (%v)", pages, st.Pages, err)
				}
			}
			fake.WaitComputing()
			l := ingestLedger(t, db)
			computed, received, answered := fake.ComputedTokens(), fake.ReceivedTokens(), fake.Tokens()
			t.Logf("requests (inputs each): %v", fake.Requests())
			t.Logf("ledger %d tokens (%d ok in %d rows, %d unknown in %d rows); provider computed %d, received %d, answered %d; %s",
				l.tokens(), l["ok"].tokens, l["ok"].rows, l["unknown"].tokens, l["unknown"].rows, computed, received, answered, st)
			if l["unknown"].rows == 0 {
				t.Fatalf("no request given up on is on the ledger; requests %v", fake.Requests())
			}
			if l.tokens() < computed || l.tokens() < received {
				t.Errorf("the ledger holds %d tokens, the provider computed %d and received %d", l.tokens(), computed, received)
			}
			// A request the server answered just as the client gave up on it is one of
			// unknown delivery to the client: the ledger's answered rows are at most what
			// the server answered.
			if l["ok"].tokens > answered {
				t.Errorf("answered requests charged %d tokens, the provider reported %d", l["ok"].tokens, answered)
			}
			if st.Unknown != l["unknown"].tokens {
				t.Errorf("the run counts %d tokens charged for requests given up on, the ledger %d", st.Unknown, l["unknown"].tokens)
			}
			// Each unknown row is at most ceil(1.25 × its estimate × the run's ratio); with
			// the provider counting as sitetools does, its estimate is what it received
			// beyond the answers the client got.
			ok := l["ok"].tokens
			if most := ok + (5*(received-ok)+3)/4 + l["unknown"].rows; tc.perWord == 0 && l.tokens() > most {
				t.Errorf("the ledger holds %d tokens, more than the %d of the answers and the margin over the rest", l.tokens(), most)
			}
		})
	}
}

// TestIngestChargesBrokenConnections: a provider that reads every request and then
// drops the connection may have computed and billed each one. The ingest fails, saying
// the provider is unavailable, and the ledger charges every request sent, retries
// included, a row each of unknown delivery: at the estimate × the stored ratio ×
// budget.RatioMargin when the provider's ratio was stored, at budget.AssumedRatio times
// the estimate before any was.
func TestIngestChargesBrokenConnections(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stored float64 // the ratio stored before the run; 0: none
		want   func(estimate int) int
	}{
		{name: "ratio stored", stored: 1, want: func(e int) int { return int(budget.SizeBy(1, int64(e))) }},
		{name: "no ratio known", want: func(e int) int { return int(budget.AssumedRatio) * e }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := pgtest.NewDB(t)
			ctx := context.Background()
			if err := budget.StoreRatio(ctx, db.Pool, "embedding", "fake-embed", tc.stored); err != nil {
				t.Fatal(err)
			}
			fake, in := slowIngester(t, db, 0, 5*time.Second)
			fake.SetReset(true)
			_, err := in.Sync(ctx, "dir:demo", walkDemo)
			if !llm.IsUnavailable(err) {
				t.Fatalf("Sync: %v, want the provider unavailable", err)
			}
			fake.WaitComputing()
			l := ingestLedger(t, db)
			sent := len(fake.Requests()) // the first batch, and its retries (llm.DefaultMaxRetries)
			if sent != 1+llm.DefaultMaxRetries || fake.ReceivedTokens()%sent != 0 {
				t.Fatalf("the provider received %d requests (%v) of %d tokens; want the first batch %d times",
					sent, fake.Requests(), fake.ReceivedTokens(), 1+llm.DefaultMaxRetries)
			}
			estimate := fake.ReceivedTokens() / sent
			want := sent * tc.want(estimate)
			if l["unknown"].rows != sent || l.tokens() != want || l["ok"].rows != 0 {
				t.Errorf("ledger %+v; want %d rows of unknown delivery, %d tokens (the provider received %d)",
					l, sent, want, fake.ReceivedTokens())
			}
		})
	}
}
