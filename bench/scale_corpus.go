package main

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sitetools/sitetools/internal/postgres"
)

// The generated site of the scale sections: scalePages pages in scaleAreas areas of
// scaleTopics topics each. Every topic has words of its own, every area words its topics
// share, and all pages a common vocabulary and English function words; each word list is
// drawn from with a Zipf distribution, as words of real text are. A page is about one
// topic: its intro and nine sections, each short enough to be one chunk, mostly use that
// topic's words, with some of a sibling topic's, of the area's and common ones. So both
// halves of the search have structure to work on: the lexemes of a topic are rare across
// the site, and the local embedder's vectors of one topic's chunks cluster together, and
// those of one area more loosely. The words are made of syllables: invented, but
// pronounceable and of the length of English ones, which the tokenizer and the English
// stemmer treat as they treat real words.
const (
	scaleSeed          = 20_240_601
	scalePages         = 10_000
	scaleSections      = 10 // the intro under the title and nine ## sections: one chunk each
	scaleAreas         = 20
	scaleTopics        = 10 // per area
	scaleTopicWords    = 60
	scaleAreaWords     = 80
	scaleCommonWords   = 800
	scaleSectionWords  = 50 // and up to scaleSectionSpread more
	scaleSectionSpread = 35
	// scaleGenerator names how the pages follow from the seed; change it with the code.
	scaleGenerator = "scale v1: 20 areas × 10 topics, words pcg(seed, 1), page i pcg(seed, 1000+i), Zipf 1.2, 10 sections of 50–84 words"
)

var scaleFunctionWords = []string{"the", "of", "and", "to", "in", "for", "with", "on", "is", "a", "by", "from", "as", "this", "that", "are", "can", "be", "it", "we"}

// scaleVocab is the corpus's vocabulary: one list per topic and area, and the common one.
type scaleVocab struct {
	topics [][]string // by topic index: area*scaleTopics + topic
	areas  [][]string
	common []string
}

var scaleVocabulary = sync.OnceValue(func() *scaleVocab {
	rng := rand.New(rand.NewPCG(scaleSeed, 1))
	seen := map[string]bool{}
	for _, w := range scaleFunctionWords {
		seen[w] = true
	}
	list := func(n int) []string {
		out := make([]string, 0, n)
		for len(out) < n {
			if w := scaleWord(rng); !seen[w] {
				seen[w] = true
				out = append(out, w)
			}
		}
		return out
	}
	v := &scaleVocab{common: list(scaleCommonWords)}
	for range scaleAreas {
		v.areas = append(v.areas, list(scaleAreaWords))
		for range scaleTopics {
			v.topics = append(v.topics, list(scaleTopicWords))
		}
	}
	return v
})

var (
	scaleOnsets = []string{"b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z",
		"br", "cr", "dr", "fl", "gr", "pl", "pr", "st", "tr", "sh", "ch", "th", "sl", "sp"}
	scaleVowels = []string{"a", "e", "i", "o", "u", "a", "e", "o", "ai", "ea", "ou", "io"}
	scaleCodas  = []string{"", "", "", "n", "r", "l", "s", "m", "t", "nd", "st", "rk", "ng"}
)

// scaleWord is an invented word of two or three syllables.
func scaleWord(rng *rand.Rand) string {
	var b strings.Builder
	n := 2 + rng.IntN(2)
	for i := range n {
		b.WriteString(scaleOnsets[rng.IntN(len(scaleOnsets))])
		b.WriteString(scaleVowels[rng.IntN(len(scaleVowels))])
		if i == n-1 || rng.IntN(3) == 0 {
			b.WriteString(scaleCodas[rng.IntN(len(scaleCodas))])
		}
	}
	return b.String()
}

// scalePage is one generated page.
type scalePage struct {
	path     string
	title    string
	sections []scaleSection // the first is the intro, under the title
}

type scaleSection struct {
	heading string
	paras   []string
}

// scalePicker draws words for one page.
type scalePicker struct {
	rng                     *rand.Rand
	v                       *scaleVocab
	topic, sibling, area    *rand.Zipf
	common                  *rand.Zipf
	topicW, siblingW, areaW []string
}

func newScalePicker(rng *rand.Rand, v *scaleVocab, topic, sibling int) *scalePicker {
	zipf := func(n int) *rand.Zipf { return rand.NewZipf(rng, 1.2, 2, uint64(n-1)) }
	return &scalePicker{
		rng: rng, v: v,
		topic: zipf(scaleTopicWords), sibling: zipf(scaleTopicWords), area: zipf(scaleAreaWords), common: zipf(scaleCommonWords),
		topicW: v.topics[topic], siblingW: v.topics[sibling], areaW: v.areas[topic/scaleTopics],
	}
}

// word draws one word: 40 % the topic's, 8 % the sibling topic's, 12 % the area's, 15 %
// common, 25 % function words.
func (p *scalePicker) word() string {
	switch r := p.rng.IntN(100); {
	case r < 40:
		return p.topicW[p.topic.Uint64()]
	case r < 48:
		return p.siblingW[p.sibling.Uint64()]
	case r < 60:
		return p.areaW[p.area.Uint64()]
	case r < 75:
		return p.v.common[p.common.Uint64()]
	default:
		return scaleFunctionWords[p.rng.IntN(len(scaleFunctionWords))]
	}
}

// content draws a word that is not a function word (titles, headings).
func (p *scalePicker) content() string {
	for {
		if w := p.word(); len(w) > 3 {
			return w
		}
	}
}

func (p *scalePicker) sentence(words int) string {
	parts := make([]string, words)
	for i := range parts {
		parts[i] = p.word()
	}
	parts[0] = strings.ToUpper(parts[0][:1]) + parts[0][1:]
	return strings.Join(parts, " ") + "."
}

// paragraphs draws words words in sentences of 6–15 words, two to three paragraphs.
func (p *scalePicker) paragraphs(words int) []string {
	var paras []string
	var sentences []string
	perPara := words/2 + 1
	n := 0
	for left := words; left > 0; {
		k := min(left, 6+p.rng.IntN(10))
		sentences = append(sentences, p.sentence(k))
		left -= k
		if n += k; n >= perPara || left == 0 {
			paras = append(paras, strings.Join(sentences, " "))
			sentences, n = nil, 0
		}
	}
	return paras
}

func capitalize(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// scalePageAt generates page i (0 ≤ i < scalePages): the same page for the same i.
func scalePageAt(i int) scalePage {
	v := scaleVocabulary()
	rng := rand.New(rand.NewPCG(scaleSeed, 1000+uint64(i)))
	topic := rng.IntN(scaleAreas * scaleTopics)
	area := topic / scaleTopics
	sibling := area*scaleTopics + (topic%scaleTopics+1+rng.IntN(scaleTopics-1))%scaleTopics
	p := newScalePicker(rng, v, topic, sibling)
	var page scalePage
	page.title = fmt.Sprintf("%s %s %s", capitalize(p.content()), p.content(), p.content())
	page.path = fmt.Sprintf("area-%02d/topic-%02d/%s-%05d", area, topic%scaleTopics, strings.ReplaceAll(strings.ToLower(page.title), " ", "-"), i)
	for s := range scaleSections {
		sec := scaleSection{paras: p.paragraphs(scaleSectionWords + rng.IntN(scaleSectionSpread))}
		if s > 0 {
			sec.heading = fmt.Sprintf("%s %s %s", capitalize(p.content()), p.content(), p.content())
		}
		page.sections = append(page.sections, sec)
	}
	return page
}

// markdown is the page as a Markdown file with front matter, as the demo site's pages.
func (pg scalePage) markdown() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "---\ntitle: %s\nlang: en\n---\n\n# %s\n", pg.title, pg.title)
	for _, s := range pg.sections {
		if s.heading != "" {
			fmt.Fprintf(&b, "\n## %s\n", s.heading)
		}
		for _, para := range s.paras {
			fmt.Fprintf(&b, "\n%s\n", para)
		}
	}
	return []byte(b.String())
}

// html is the page as a site would serve it: a header and footer around the article.
func (pg scalePage) html() []byte {
	var b strings.Builder
	e := html.EscapeString
	fmt.Fprintf(&b, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title></head><body>\n", e(pg.title))
	b.WriteString("<header><nav><a href=\"/\">Home</a> <a href=\"/contact\">Contact</a></nav></header>\n<main><article>\n")
	fmt.Fprintf(&b, "<h1>%s</h1>\n", e(pg.title))
	for _, s := range pg.sections {
		if s.heading != "" {
			fmt.Fprintf(&b, "<h2>%s</h2>\n", e(s.heading))
		}
		for _, para := range s.paras {
			fmt.Fprintf(&b, "<p>%s</p>\n", e(para))
		}
	}
	b.WriteString("</article></main>\n<footer><p>Generated site</p></footer>\n</body></html>\n")
	return []byte(b.String())
}

// writeScaleCorpus writes the first n pages into dir as Markdown files.
func writeScaleCorpus(dir string, n int) error {
	made := map[string]bool{}
	for i := range n {
		pg := scalePageAt(i)
		file := filepath.Join(dir, filepath.FromSlash(pg.path)+".md")
		if d := filepath.Dir(file); !made[d] {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
			made[d] = true
		}
		if err := os.WriteFile(file, pg.markdown(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// The scale sections' names, and the database of the directory ingested with the local
// embedder: the ingest section writes it, the search section searches it.
const (
	scaleIngestName = "Ingest at scale"
	scaleSearchName = "Search at scale"
	scaleDatabase   = "sitetools_bench_scale"
	scaleBaseURL    = "https://scale.example"
)

// scaleShared is what the scale sections of one run share: the generated site, written
// once into a temporary directory and removed after the last of them.
var scaleShared struct {
	dir  string
	done map[string]bool
}

// scaleCorpusDir returns the directory holding the generated site as Markdown files,
// writing it on first use.
func scaleCorpusDir(progress io.Writer) (string, error) {
	if scaleShared.dir != "" {
		return scaleShared.dir, nil
	}
	dir, err := os.MkdirTemp("", "sitetools-bench-scale-")
	if err != nil {
		return "", err
	}
	fmt.Fprintf(progress, "scale: writing %s generated pages into %s\n", thousands(scalePages), dir)
	if err := writeScaleCorpus(dir, scalePages); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	scaleShared.dir = dir
	return dir, nil
}

// scaleFinished records that a scale section is over, and removes the generated site
// once no other scale section that -run selects is still to run (none is after a
// failure: the run stops).
func scaleFinished(env sectionEnv, name string, failed bool) {
	if scaleShared.done == nil {
		scaleShared.done = map[string]bool{}
	}
	scaleShared.done[name] = true
	for _, n := range []string{scaleIngestName, scaleSearchName, upkeepName} {
		if env.s.run.MatchString(n) && !scaleShared.done[n] && !failed {
			return
		}
	}
	if scaleShared.dir != "" {
		os.RemoveAll(scaleShared.dir)
		scaleShared.dir = ""
	}
}

// freshDatabase drops the database name on the cluster of adminURL, creates it anew and
// migrates it, and returns its URL.
func freshDatabase(ctx context.Context, adminURL, name string) (string, error) {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", err
	}
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	conn.Close(ctx)
	if err != nil {
		return "", err
	}
	url, err := createDatabase(ctx, adminURL, name)
	if err != nil {
		return "", err
	}
	if _, err := postgres.Migrate(ctx, url); err != nil {
		return "", err
	}
	return url, nil
}

// dropDatabase removes the database name from the cluster of adminURL.
func dropDatabase(ctx context.Context, adminURL, name string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	return err
}

// scaleMeta says what the scale database holds and how it was made; the search section
// reuses the database when it holds what the generator makes.
type scaleMeta struct {
	generator     string
	pages, chunks int
	how           string
	took          time.Duration
	builtAt       time.Time
}

func writeScaleMeta(ctx context.Context, db *postgres.DB, m scaleMeta) error {
	if _, err := db.Pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS bench_scale_meta (
		singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton), generator text NOT NULL, pages integer NOT NULL,
		chunks integer NOT NULL, how text NOT NULL, took_ms bigint NOT NULL, built_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return err
	}
	_, err := db.Pool.Exec(ctx, `INSERT INTO bench_scale_meta (generator, pages, chunks, how, took_ms) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (singleton) DO UPDATE SET generator = EXCLUDED.generator, pages = EXCLUDED.pages, chunks = EXCLUDED.chunks,
			how = EXCLUDED.how, took_ms = EXCLUDED.took_ms, built_at = now()`,
		m.generator, m.pages, m.chunks, m.how, m.took.Milliseconds())
	return err
}

// readScaleMeta returns the meta row, and whether the database still holds what it says:
// as many chunks, and a valid HNSW index over them.
func readScaleMeta(ctx context.Context, db *postgres.DB) (scaleMeta, bool, error) {
	var m scaleMeta
	var ms int64
	var exists bool
	if err := db.Pool.QueryRow(ctx, `SELECT to_regclass('bench_scale_meta') IS NOT NULL`).Scan(&exists); err != nil || !exists {
		return m, false, err
	}
	err := db.Pool.QueryRow(ctx, `SELECT generator, pages, chunks, how, took_ms, built_at FROM bench_scale_meta`).
		Scan(&m.generator, &m.pages, &m.chunks, &m.how, &ms, &m.builtAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return m, false, nil
	}
	if err != nil {
		return m, false, err
	}
	m.took = time.Duration(ms) * time.Millisecond
	var chunks int
	var indexed bool
	err = db.Pool.QueryRow(ctx, fmt.Sprintf(`SELECT (SELECT count(*) FROM chunks), EXISTS (SELECT 1 FROM pg_index i
		JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = 'chunks_embedding_hnsw_%d' AND i.indisvalid)`, hnswDims)).Scan(&chunks, &indexed)
	if err != nil {
		return m, false, err
	}
	return m, m.generator == scaleBuildKey() && m.pages == scalePages && m.chunks == chunks && indexed, nil
}

// scaleBuildKey names what the scale database was made by: the generator and the schema
// (a migration may change what ingest writes).
func scaleBuildKey() string {
	return fmt.Sprintf("%s; schema %d", scaleGenerator, postgres.LatestVersion())
}
