package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sitetools/sitetools/internal/llm"
)

// The token-estimate scenario: CountTokens (every chat round, every search query and
// every ingested chunk is estimated with it) on 32 000 characters of hostile shapes, each
// timed against plain English of the same length in the same run.
const (
	tokensName  = "token estimate"
	tokensChars = 32_000
	tokensRuns  = 21                   // per shape, interleaved with English; the median counts
	tokensGoal  = 5 * time.Millisecond // per shape
	tokensRatio = 3.0                  // × English, the second goal (reported)
)

// tokensShapes are the texts timed: plain English, and what a hostile page or chat
// message can hold.
func tokensShapes() []struct{ name, unit string } {
	return []struct{ name, unit string }{
		{"plain English (baseline)", "The quick brown fox jumps over the lazy dog while the site answers visitors' questions. "},
		{"punctuation and combining marks", ".\u0301"},
		{"letters with combining marks", "a\u0301"},
		{"digits", "1234567890"},
		{"one letter repeated", "a"},
		{"spaces", " "},
		{"line breaks", "\n"},
		{"punctuation", "!?"},
		{"CJK without spaces", "漢字仮名交じり文"},
		{"emoji", "😀"},
	}
}

type tokensRow struct {
	name   string
	tokens int
	median time.Duration
	ratio  float64 // median ÷ English's median
}

func (r tokensRow) pass() bool { return r.median < tokensGoal }

func measureTokens() ([]tokensRow, error) {
	if err := llm.LoadTokenizer(); err != nil {
		return nil, err
	}
	texts := map[string]string{}
	for _, s := range tokensShapes() {
		r := []rune(strings.Repeat(s.unit, tokensChars/len([]rune(s.unit))+1))
		texts[s.name] = string(r[:tokensChars])
	}
	english := tokensShapes()[0].name
	timeOf := func(text string) time.Duration {
		start := time.Now()
		llm.CountTokens(text)
		return time.Since(start)
	}
	var rows []tokensRow
	var baseline []time.Duration
	for _, s := range tokensShapes() {
		var own []time.Duration
		for range tokensRuns {
			own = append(own, timeOf(texts[s.name]))
			baseline = append(baseline, timeOf(texts[english]))
		}
		rows = append(rows, tokensRow{name: s.name, tokens: llm.CountTokens(texts[s.name]), median: medianDuration(own)})
	}
	base := medianDuration(baseline)
	for i := range rows {
		rows[i].ratio = float64(rows[i].median) / float64(base)
	}
	return rows, nil
}

func medianDuration(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func tokensText(b *strings.Builder, rows []tokensRow) {
	fmt.Fprintf(b, "%s: llm.CountTokens on %s characters of each shape, median of %d runs interleaved with plain English; goal < %s each (and, reported, ≤ %.0f× English)\n\n",
		tokensName, thousands(tokensChars), tokensRuns, tokensGoal, tokensRatio)
	rows2 := [][]string{{"shape", "tokens", "median", "× English", "goal", "result"}}
	for _, r := range rows {
		within := "yes"
		if r.ratio > tokensRatio {
			within = "no"
		}
		rows2 = append(rows2, []string{r.name, thousands(r.tokens), duration(r.median), fmt.Sprintf("%.1f (%s)", r.ratio, within),
			"< " + tokensGoal.String(), verdictOf(r.pass())})
	}
	table(b, rows2)
	b.WriteString("\n- the estimate is linear in the text: it splits pieces as cl100k_base's pattern does and merges\n" +
		"  each piece's bytes by rank; pieces over 64 bytes are merged in parts. A shape with more tokens\n" +
		"  than English does more lookups, which is what its ratio shows.\n")
}
