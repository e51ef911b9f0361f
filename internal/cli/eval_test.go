package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sitetools/sitetools/internal/app"
	"github.com/sitetools/sitetools/internal/app/apptest"
	"github.com/sitetools/sitetools/internal/cli"
	"github.com/sitetools/sitetools/internal/llm"
	"github.com/sitetools/sitetools/internal/llm/llmtest"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
	"github.com/sitetools/sitetools/tools"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

const (
	demoSite     = "../../deploy/demo/site"
	demoEval     = "../../deploy/demo/eval.yaml"
	demoSynonyms = "../../deploy/demo/synonyms.txt"
	demoBase     = "https://northwind.example"
)

// evalRun is one `sitetools eval` run: what it wrote where, and how it ended.
type evalRun struct {
	stdout, stderr string
	err            error
}

func runEval(t *testing.T, args ...string) evalRun {
	t.Helper()
	var out, errOut bytes.Buffer
	err := cli.Run(context.Background(), append([]string{"eval"}, args...), &out, &errOut)
	return evalRun{out.String(), errOut.String(), err}
}

// ingestDemo makes a database of the demo site with the configuration of the environment,
// and points DATABASE_URL at it.
func ingestDemo(t *testing.T) string {
	t.Helper()
	url := pgtest.NewURL(t)
	t.Setenv("DATABASE_URL", url)
	if out, err := run(t, "ingest", "--dir", demoSite, "--base-url", demoBase); err != nil {
		t.Fatalf("ingest: %s %v", out, err)
	}
	return url
}

// evalJSON is the part of eval --json the tests read.
type evalJSON struct {
	Questions int `json:"questions"`
	Depth     int `json:"depth"`
	Live      evalColumn
	Candidate *evalColumn
	Diff      *evalScores `json:"difference"`
}

type evalScore struct {
	Name              string
	N, Found1, Found3 int
	Hit1, Hit3, MRR   float64
}

type evalScores struct {
	All       evalScore
	Labels    []evalScore
	Languages []evalScore
}

type evalColumn struct {
	Index, Note string
	evalScores
	Missed []struct {
		Where, Question string
		Expected        []string
		Rank            int
		Instead         []struct{ Title, URL string }
	}
	Degraded map[string]int
	Cost     struct {
		ProviderCalls, Failed, CacheHits int
		Tokens                           int64
	}
}

func parseEvalJSON(t *testing.T, r evalRun) evalJSON {
	t.Helper()
	if r.err != nil {
		t.Fatalf("eval: %v\n%s%s", r.err, r.stdout, r.stderr)
	}
	var doc evalJSON
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("eval --json: %v\n%s", err, r.stdout)
	}
	return doc
}

// demoQuestion is an entry of the demo's questions file, read here on its own.
type demoQuestion struct {
	Question, Page, Lang, Label string
	Pages                       []string
	line                        int
}

func readDemoQuestions(t *testing.T) []demoQuestion {
	t.Helper()
	b, err := os.ReadFile(demoEval)
	if err != nil {
		t.Fatal(err)
	}
	var nodes []yaml.Node
	if err := yaml.Unmarshal(b, &nodes); err != nil {
		t.Fatal(err)
	}
	var qs []demoQuestion
	for _, n := range nodes {
		var q demoQuestion
		if err := n.Decode(&q); err != nil {
			t.Fatal(err)
		}
		if q.Page != "" {
			q.Pages = append(q.Pages, q.Page)
		}
		q.line = n.Line
		qs = append(qs, q)
	}
	return qs
}

// visitorRanks asks every question of search_site through the service's own registry, as a
// visitor's client does, and returns the rank of the first expected page (0: not among
// ten) and the results, by path.
func visitorRanks(t *testing.T, url string, qs []demoQuestion) ([]int, [][]struct{ Title, URL string }) {
	t.Helper()
	ctx := context.Background()
	db, err := postgres.Open(ctx, url, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	cfg := apptest.Config(t, map[string]string{"SEARCH_SYNONYMS_FILE": demoSynonyms})
	svc, err := app.Build(ctx, cfg, app.Options{DB: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	ranks := make([]int, len(qs))
	results := make([][]struct{ Title, URL string }, len(qs))
	for i, q := range qs {
		args, _ := json.Marshal(map[string]any{"query": q.Question, "limit": 10})
		res, err := svc.HTTP.Registry().Call(tools.WithRequest(ctx, tools.Request{Channel: tools.ChannelWebMCP}), "search_site", args)
		if err != nil || res.IsError {
			t.Fatalf("%q: %v %+v", q.Question, err, res)
		}
		b, _ := json.Marshal(res.StructuredContent)
		var out struct{ Results []struct{ Title, URL string } }
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		results[i] = out.Results
		for j, r := range out.Results {
			if slices.Contains(q.Pages, strings.TrimPrefix(r.URL, demoBase)) {
				ranks[i] = j + 1
				break
			}
		}
	}
	return ranks, results
}

// figures are hit@1, hit@3 and MRR counted here, by group ("" for all).
type figures struct {
	n, found1, found3 int
	rr                float64
}

func countFigures(qs []demoQuestion, ranks []int) map[string]*figures {
	out := map[string]*figures{}
	for i, q := range qs {
		for _, g := range []string{"", "label " + q.Label, "lang " + q.Lang} {
			f := out[g]
			if f == nil {
				f = &figures{}
				out[g] = f
			}
			f.n++
			if ranks[i] == 1 {
				f.found1++
			}
			if ranks[i] >= 1 && ranks[i] <= 3 {
				f.found3++
			}
			if ranks[i] > 0 {
				f.rr += 1 / float64(ranks[i])
			}
		}
	}
	return out
}

func checkScore(t *testing.T, group string, got evalScore, want *figures) {
	t.Helper()
	if want == nil {
		t.Errorf("%s: eval reports a group the questions do not have", group)
		return
	}
	mrr := want.rr / float64(want.n)
	if got.N != want.n || got.Found1 != want.found1 || got.Found3 != want.found3 ||
		math.Abs(got.Hit1-float64(want.found1)/float64(want.n)) > 1e-4 || math.Abs(got.Hit3-float64(want.found3)/float64(want.n)) > 1e-4 ||
		math.Abs(got.MRR-mrr) > 1e-4 {
		t.Errorf("%s: eval says n %d, hit@1 %d (%.4f), hit@3 %d (%.4f), MRR %.4f; the visitor's searches give n %d, %d, %d, MRR %.4f",
			group, got.N, got.Found1, got.Hit1, got.Found3, got.Hit3, got.MRR, want.n, want.found1, want.found3, mrr)
	}
}

// TestEvalDemo runs the demo's questions on the demo site with the local embedder and the
// demo's synonyms, and checks every figure of the report against the ranks the same
// questions get as a visitor's searches, counted here; each missed question is listed with
// the three pages that ranked instead; a second run is answered from the cache.
func TestEvalDemo(t *testing.T) {
	t.Setenv("SEARCH_SYNONYMS_FILE", demoSynonyms)
	url := ingestDemo(t)
	qs := readDemoQuestions(t)
	if len(qs) < 15 || len(qs) > 25 {
		t.Fatalf("the demo has %d questions; 15 to 25 wanted", len(qs))
	}

	first := parseEvalJSON(t, runEval(t, demoEval, "--json"))
	text := runEval(t, demoEval)
	if text.err != nil {
		t.Fatalf("eval: %v\n%s", text.err, text.stderr)
	}
	ranks, results := visitorRanks(t, url, qs)

	want := countFigures(qs, ranks)
	if first.Questions != len(qs) || first.Depth != 10 || first.Candidate != nil {
		t.Fatalf("questions %d, depth %d, candidate %v", first.Questions, first.Depth, first.Candidate)
	}
	checkScore(t, "all", first.Live.All, want[""])
	for _, g := range first.Live.Labels {
		checkScore(t, "label "+g.Name, g, want["label "+g.Name])
	}
	for _, g := range first.Live.Languages {
		checkScore(t, "lang "+g.Name, g, want["lang "+g.Name])
	}
	if len(first.Live.Labels) != 4 || len(first.Live.Languages) != 2 {
		t.Errorf("labels %+v, languages %+v; want 4 labels and 2 languages", first.Live.Labels, first.Live.Languages)
	}
	checkMissed(t, qs, ranks, results, first, text.stdout)

	// The first run paid one embedding a question; the second found them in the cache.
	if c := first.Live.Cost; c.ProviderCalls != len(qs) || c.Failed != 0 || c.Tokens <= 0 || c.CacheHits != 0 {
		t.Errorf("first run's cost %+v; want %d calls, tokens, no cache hit", c, len(qs))
	}
	second := parseEvalJSON(t, runEval(t, demoEval, "--json"))
	if c := second.Live.Cost; c.ProviderCalls != 0 || c.Tokens != 0 || c.CacheHits != len(qs) {
		t.Errorf("second run's cost %+v; want no call and %d cache hits", c, len(qs))
	}
	if second.Live.All != first.Live.All {
		t.Errorf("the second run scores %+v, the first %+v", second.Live.All, first.Live.All)
	}
	if !strings.Contains(text.stdout, "Cost: 22 searches; 0 provider calls (0 failed), 0 tokens, 0.000000 USD; 22 query vectors from the cache.") {
		t.Errorf("no cost line in\n%s", text.stdout)
	}
	// On the ledger: the first run's calls, and a cache hit a question for each run after
	// (the text run and the second JSON run).
	db, err := postgres.Open(context.Background(), url, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var calls, hits int
	if err := db.Pool.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE NOT cache_hit), count(*) FILTER (WHERE cache_hit)
		FROM ledger WHERE channel = 'eval' AND tool = 'search_site'`).Scan(&calls, &hits); err != nil {
		t.Fatal(err)
	}
	if calls != len(qs) || hits != 2*len(qs) {
		t.Errorf("ledger rows on the eval channel: %d calls, %d cache hits; want %d and %d", calls, hits, len(qs), 2*len(qs))
	}
}

// checkMissed: every question without an expected page in the first three is in the
// report, with its rank and the three pages the visitor's search ranked instead, and the
// text shows them.
func checkMissed(t *testing.T, qs []demoQuestion, ranks []int, results [][]struct{ Title, URL string }, doc evalJSON, text string) {
	t.Helper()
	var missed []int
	for i, r := range ranks {
		if r == 0 || r > 3 {
			missed = append(missed, i)
		}
	}
	if len(missed) == 0 {
		t.Fatal("no demo question misses the first three with the local embedder: the test of the missed list needs one")
	}
	if len(doc.Live.Missed) != len(missed) {
		t.Fatalf("eval lists %d missed questions, the visitor's searches miss %d", len(doc.Live.Missed), len(missed))
	}
	for k, i := range missed {
		m := doc.Live.Missed[k]
		if m.Question != qs[i].Question || m.Rank != ranks[i] || m.Where != "line "+itoa(qs[i].line) {
			t.Errorf("missed %d: %+v; want %q at rank %d, line %d", k, m, qs[i].Question, ranks[i], qs[i].line)
		}
		top := results[i][:3]
		if len(m.Instead) != 3 {
			t.Fatalf("missed %q: instead %+v", m.Question, m.Instead)
		}
		for j := range top {
			if m.Instead[j] != top[j] {
				t.Errorf("missed %q: instead %d is %+v, the visitor's search ranked %+v", m.Question, j+1, m.Instead[j], top[j])
			}
			if !strings.Contains(text, itoa(j+1)+". "+top[j].Title+"  "+top[j].URL) {
				t.Errorf("the text does not show %q's result %d (%s)", m.Question, j+1, top[j].URL)
			}
		}
		if !strings.Contains(text, "line "+itoa(qs[i].line)+" ["+qs[i].Label+", "+qs[i].Lang+"] "+qs[i].Question) {
			t.Errorf("the text does not list the missed %q", qs[i].Question)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// shadowModel is the candidate of TestEvalCandidate: a second fake model, 192 dimensions.
var shadowModel = sitesearch.IndexModel{Name: "fake-semantic", Dimensions: 192}

// buildShadow makes the vectors of shadowModel beside the live ones of the database at
// url, as a rebuild for it does, for up to limit chunks (0: all). The fake embeds
// lexically; the chunks of the Sonnenberg Dental case study get the vector the fake gives
// any text with "dentist", as a semantic model maps a question near its answer.
func buildShadow(t *testing.T, url string, fake *llmtest.Server, limit int) sitesearch.RebuildProgress {
	t.Helper()
	ctx := context.Background()
	db, err := postgres.Open(ctx, url, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	idx := postgres.NewSiteIndex(db, 384)
	if _, err := idx.BeginRebuild(ctx, shadowModel); err != nil {
		t.Fatal(err)
	}
	embedder, err := llm.NewOpenAI(llm.OpenAIOptions{BaseURL: fake.BaseURL(), Model: shadowModel.Name, Dimensions: shadowModel.Dimensions})
	if err != nil {
		t.Fatal(err)
	}
	dentist := make([]float32, shadowModel.Dimensions)
	dentist[7] = 1
	fake.SetVector("dentist", dentist)
	for done := 0; limit == 0 || done < limit; {
		batch := 32
		if limit > 0 {
			batch = min(batch, limit-done)
		}
		chunks, err := idx.PendingChunks(ctx, 0, batch)
		if err != nil || len(chunks) == 0 {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		ids, texts := make([]int64, len(chunks)), make([]string, len(chunks))
		for i, c := range chunks {
			ids[i], texts[i] = c.ID, c.Text
		}
		out, err := embedder.Embed(ctx, texts)
		if err != nil {
			t.Fatal(err)
		}
		for i, text := range texts {
			if strings.Contains(text, "Sonnenberg Dental") {
				out.Vectors[i] = dentist
			}
		}
		if err := idx.PutNextVectors(ctx, ids, out.Vectors); err != nil {
			t.Fatal(err)
		}
		done += len(chunks)
	}
	p, ok, err := idx.RebuildProgress(ctx)
	if err != nil || !ok {
		t.Fatalf("rebuild progress: %v %v", ok, err)
	}
	return p
}

func useFake(t *testing.T, fake *llmtest.Server) {
	t.Setenv("EMBEDDINGS_PROVIDER", "openai")
	t.Setenv("EMBEDDINGS_BASE_URL", fake.BaseURL())
	t.Setenv("EMBEDDINGS_MODEL", shadowModel.Name)
	t.Setenv("EMBEDDINGS_DIMENSIONS", strconv.Itoa(shadowModel.Dimensions))
}

func missedQuestion(c *evalColumn, question string) bool {
	return slices.ContainsFunc(c.Missed, func(m struct {
		Where, Question string
		Expected        []string
		Rank            int
		Instead         []struct{ Title, URL string }
	}) bool {
		return m.Question == question
	})
}

// TestEvalCandidate: the demo indexed with the local embedder, and a rebuild for a second
// fake model beside it, as a model change makes. eval --candidate measures both: the live
// index as a run without a candidate does (queries embedded locally), the candidate with
// the queries embedded by the new model (one provider call a question), side by side with
// the difference; a question the new model answers leaves the candidate's missed list. A
// rebuild under way says how far it is. --candidate-database compares with a second
// database instead.
func TestEvalCandidate(t *testing.T) {
	t.Setenv("SEARCH_SYNONYMS_FILE", demoSynonyms)
	url := ingestDemo(t)
	alone := parseEvalJSON(t, runEval(t, demoEval, "--json"))
	const dentist = "have you worked for a dentist"
	if !missedQuestion(&alone.Live, dentist) {
		t.Fatalf("the live index finds %q in the first three; the test needs a question it misses", dentist)
	}

	fake := llmtest.NewServer(t, shadowModel.Dimensions)
	partial := buildShadow(t, url, fake, 64)
	useFake(t, fake)
	n := len(readDemoQuestions(t))
	calls := fake.Calls()
	during := parseEvalJSON(t, runEval(t, demoEval, "--json", "--candidate"))
	if during.Candidate == nil || during.Candidate.Note != fmt.Sprintf("the rebuild beside the live index, %d of %d chunks made so far "+
		"(the others are found by their words alone)", partial.Done, partial.Total) {
		t.Fatalf("eval --candidate during a rebuild: %+v", during.Candidate)
	}
	// The live index's queries are embedded locally, as before (from the cache now); the
	// candidate's by the new model, once each.
	if got := fake.Calls() - calls; got != n || during.Candidate.Cost.ProviderCalls != n || during.Candidate.Cost.Tokens <= 0 ||
		during.Live.Cost.ProviderCalls != 0 || during.Live.Cost.CacheHits != n {
		t.Errorf("the new model was called %d times; the candidate's cost %+v, the live one's %+v; want %d calls for the candidate",
			got, during.Candidate.Cost, during.Live.Cost, n)
	}

	buildShadow(t, url, fake, 0)
	doc := parseEvalJSON(t, runEval(t, demoEval, "--json", "--candidate"))
	if doc.Candidate == nil || doc.Diff == nil || doc.Candidate.Note != "the rebuild beside the live index" {
		t.Fatalf("no candidate column, or a note of a rebuild under way: %+v", doc)
	}
	if doc.Live.Index != "local-lexical-v1 (384 dimensions)" || doc.Candidate.Index != "fake-semantic (192 dimensions)" {
		t.Errorf("indexes %q and %q", doc.Live.Index, doc.Candidate.Index)
	}
	if doc.Live.All != alone.Live.All || !slices.Equal(doc.Live.Labels, alone.Live.Labels) || !slices.Equal(doc.Live.Languages, alone.Live.Languages) {
		t.Errorf("the live column %+v differs from a run without a candidate %+v", doc.Live.evalScores, alone.Live.evalScores)
	}
	if missedQuestion(doc.Candidate, dentist) || !missedQuestion(&doc.Live, dentist) {
		t.Errorf("%q: missed by live %v, by the candidate %v; want by live only", dentist, missedQuestion(&doc.Live, dentist), missedQuestion(doc.Candidate, dentist))
	}
	checkDifference(t, "all", doc.Live.All, doc.Candidate.All, doc.Diff.All)
	for i := range doc.Diff.Labels {
		checkDifference(t, doc.Diff.Labels[i].Name, doc.Live.Labels[i], doc.Candidate.Labels[i], doc.Diff.Labels[i])
	}
	if doc.Diff.All.Found3 < 1 {
		t.Errorf("the candidate finds %d more in the first three; want at least the dentist", doc.Diff.All.Found3)
	}

	text := runEval(t, demoEval, "--candidate")
	for _, want := range []string{"   live   cand.       Δ", "Missed by the live index: ", "Missed by the candidate index: ",
		"Cost of the candidate index: 22 searches; 0 provider calls (0 failed), 0 tokens, 0.000000 USD; 22 query vectors from the cache.",
		"The candidate finds "} {
		if !strings.Contains(text.stdout, want) {
			t.Errorf("eval --candidate's text lacks %q:\n%s", want, text.stdout)
		}
	}

	// A second database of the new model instead of the rebuild.
	other := pgtest.NewURL(t)
	t.Setenv("DATABASE_URL", other)
	if out, err := run(t, "ingest", "--dir", demoSite, "--base-url", demoBase); err != nil {
		t.Fatalf("ingest into the second database: %s %v", out, err)
	}
	t.Setenv("DATABASE_URL", url)
	second := parseEvalJSON(t, runEval(t, demoEval, "--json", "--candidate-database", other))
	if second.Candidate == nil || second.Candidate.Index != "fake-semantic (192 dimensions)" || second.Candidate.All.N != n ||
		second.Live.All != alone.Live.All || len(second.Candidate.Degraded) != 0 {
		t.Errorf("--candidate-database: %+v", second)
	}
}

func checkDifference(t *testing.T, group string, live, cand, diff evalScore) {
	t.Helper()
	if diff.Found1 != cand.Found1-live.Found1 || diff.Found3 != cand.Found3-live.Found3 || math.Abs(diff.MRR-(cand.MRR-live.MRR)) > 2e-4 ||
		math.Abs(diff.Hit3-(cand.Hit3-live.Hit3)) > 2e-4 {
		t.Errorf("%s: difference %+v of live %+v and candidate %+v", group, diff, live, cand)
	}
}

// TestEvalThreshold: --min-hit3 passes a run whose hit@3 reaches it (equal included) and
// fails one below it, after printing the whole report, with an exit code that is not a
// usage error's.
func TestEvalThreshold(t *testing.T) {
	t.Setenv("SEARCH_SYNONYMS_FILE", demoSynonyms)
	ingestDemo(t)
	all := parseEvalJSON(t, runEval(t, demoEval, "--json")).Live.All
	if all.Found3 == all.N {
		t.Fatal("every demo question is found: no threshold above the figure to test")
	}
	reach := strconv.FormatFloat(float64(all.Found3)/float64(all.N), 'f', -1, 64)
	if r := runEval(t, demoEval, "--min-hit3", reach); r.err != nil {
		t.Errorf("--min-hit3 %s with hit@3 %d of %d: %v", reach, all.Found3, all.N, r.err)
	}
	above := strconv.FormatFloat(float64(all.Found3+1)/float64(all.N), 'f', 3, 64)
	r := runEval(t, "--min-hit3", above, demoEval)
	if r.err == nil || cli.ExitCode(r.err) != 1 || !strings.Contains(r.err.Error(), fmt.Sprintf("(%d of %d), below --min-hit3 %s", all.Found3, all.N, above)) {
		t.Fatalf("--min-hit3 %s: err %v (exit %d)", above, r.err, cli.ExitCode(r.err))
	}
	if !strings.Contains(r.stdout, "Missed: ") || !strings.Contains(r.stdout, "Cost: ") {
		t.Errorf("the report was not printed before the failure:\n%s", r.stdout)
	}
	jr := runEval(t, demoEval, "--json", "--min-hit3", above)
	if jr.err == nil || !json.Valid([]byte(jr.stdout)) {
		t.Errorf("--json --min-hit3 %s: err %v, stdout valid JSON %v", above, jr.err, json.Valid([]byte(jr.stdout)))
	}
}

// TestEvalMistakes: a file or a command line eval cannot run is a usage error (exit 2)
// that names each entry's line and what is wrong with it, before any search.
func TestEvalMistakes(t *testing.T) {
	ingestDemo(t)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := write("bad.yaml", "- question: How much is a day?\n  pgae: /pricing\n- question: Wo ist das Büro?\n  page: /de/contact\n  lang: deutsch\n")
	missing := write("missing.yaml", "- question: How much is a day?\n  page: /pricing\n- question: Where are you?\n  page: /contakt\n")
	jsonl := write("q.jsonl", `{"question": "day rate", "page": "/pricing"}`+"\n"+`{"question": "office", "pages": ["/contact"], "extra": 1}`+"\n")
	long := write("long.yaml", "- question: "+strings.Repeat("word ", 70)+"\n  page: /pricing\n")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"eval needs one questions file"}},
		{[]string{demoEval, demoEval}, []string{"eval needs one questions file"}},
		{[]string{demoEval, "--min-hit3", "80"}, []string{"--min-hit3 is a fraction from 0 to 1"}},
		{[]string{demoEval, "--candidate", "--candidate-database", "postgres://x"}, []string{"not both"}},
		{[]string{dir + "/none.yaml"}, []string{"none.yaml", "no such file"}},
		{[]string{bad}, []string{"line 2: unknown field \"pgae\"", "line 1: no page", "line 3: lang \"deutsch\" is not a two-letter language code"}},
		{[]string{jsonl}, []string{"line 2: unknown field \"extra\""}},
		{[]string{missing}, []string{"line 3: page /contakt is not in the index"}},
		{[]string{long}, []string{"line 1: the search refuses the question"}},
		{[]string{demoEval, "--candidate"}, []string{"no rebuild for another model", "--candidate-database URL"}},
	} {
		r := runEval(t, tc.args...)
		if r.err == nil || cli.ExitCode(r.err) != 2 {
			t.Errorf("eval %v: err %v, exit %d; want a usage error", tc.args, r.err, cli.ExitCode(r.err))
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(r.err.Error(), w) {
				t.Errorf("eval %v: %q does not say %q", tc.args, r.err, w)
			}
		}
		if r.stdout != "" {
			t.Errorf("eval %v printed a report: %s", tc.args, r.stdout)
		}
	}
}

// TestEvalWritesOnlyTheReport: with the log at debug, what eval writes beside the report
// (stderr) holds nothing of the questions file: markers in questions and labels are
// found 0 times there, and on stdout.
func TestEvalWritesOnlyTheReport(t *testing.T) {
	ingestDemo(t)
	t.Setenv("LOG_LEVEL", "debug")
	file := t.TempDir() + "/q.jsonl"
	body := `{"question": "zebracornflakes quixoticmarmalade", "page": "/imprint", "label": "labelmarkerpx"}` + "\n" +
		`{"question": "bicycle parking gingerlyfjord", "pages": ["/contact"], "lang": "en", "label": "labelmarkerqz"}` + "\n"
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{file}, {file, "--json"}} {
		r := runEval(t, args...)
		if r.err != nil {
			t.Fatalf("eval %v: %v", args, r.err)
		}
		for _, m := range []string{"zebracornflakes", "quixoticmarmalade", "gingerlyfjord", "labelmarkerpx", "labelmarkerqz"} {
			if n := strings.Count(strings.ToLower(r.stderr), m); n != 0 {
				t.Errorf("eval %v: stderr holds %s %d times:\n%s", args, m, n, r.stderr)
			}
		}
		if !strings.Contains(r.stdout, "labelmarkerpx") || !strings.Contains(r.stdout, "labelmarkerqz") {
			t.Errorf("eval %v: the report lacks the labels:\n%s", args, r.stdout)
		}
	}
}

// TestEvalCandidateOtherDimension: the candidate is the same model at another dimension
// (the local embedder at 256 against 384), in a second database. Each index is searched
// with a vector of its own length: the cache keeps the two apart.
func TestEvalCandidateOtherDimension(t *testing.T) {
	url := ingestDemo(t)
	other := pgtest.NewURL(t)
	t.Setenv("DATABASE_URL", other)
	t.Setenv("EMBEDDINGS_DIMENSIONS", "256")
	if out, err := run(t, "ingest", "--dir", demoSite, "--base-url", demoBase); err != nil {
		t.Fatalf("ingest at 256 dimensions: %s %v", out, err)
	}
	t.Setenv("DATABASE_URL", url)
	doc := parseEvalJSON(t, runEval(t, demoEval, "--json", "--candidate-database", other))
	if doc.Live.Index != "local-lexical-v1 (384 dimensions)" || doc.Candidate == nil || doc.Candidate.Index != "local-lexical-v1 (256 dimensions)" {
		t.Fatalf("indexes: %+v", doc)
	}
	n := len(readDemoQuestions(t))
	if doc.Live.Cost.ProviderCalls != n || doc.Candidate.Cost.ProviderCalls != n || doc.Candidate.Cost.CacheHits != 0 {
		t.Errorf("costs: live %+v, candidate %+v; want a vector of each length a question", doc.Live.Cost, doc.Candidate.Cost)
	}
}

// TestEvalWaitsForASlowModel: a provider slower than EMBEDDINGS_TIMEOUT, which would
// degrade a visitor's search to full-text, is waited for up to EMBEDDINGS_INGEST_TIMEOUT:
// the evaluation measures the model.
func TestEvalWaitsForASlowModel(t *testing.T) {
	fake := llmtest.NewServer(t, 64)
	t.Setenv("EMBEDDINGS_PROVIDER", "openai")
	t.Setenv("EMBEDDINGS_BASE_URL", fake.BaseURL())
	t.Setenv("EMBEDDINGS_MODEL", "slow")
	t.Setenv("EMBEDDINGS_DIMENSIONS", "64")
	ingestDemo(t)
	t.Setenv("EMBEDDINGS_TIMEOUT", "100ms")
	t.Setenv("EMBEDDINGS_INGEST_TIMEOUT", "10s")
	fake.SetDelay(400 * time.Millisecond)
	file := t.TempDir() + "/q.yaml"
	if err := os.WriteFile(file, []byte("- question: day rate\n  page: /pricing\n- question: bicycle parking\n  page: /contact\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := parseEvalJSON(t, runEval(t, file, "--json"))
	if len(doc.Live.Degraded) != 0 || doc.Live.Cost.ProviderCalls != 2 || doc.Live.Cost.Failed != 0 {
		t.Errorf("degraded %v, cost %+v; want both questions embedded by the slow model", doc.Live.Degraded, doc.Live.Cost)
	}
}
