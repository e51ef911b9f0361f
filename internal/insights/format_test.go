package insights_test

import (
	"strings"
	"testing"

	"github.com/sitetools/sitetools/internal/insights"
)

// TestReportFormats: the text and Markdown reports say what the numbers are, in words an
// owner reads, and a page title cannot break the Markdown table it is in.
func TestReportFormats(t *testing.T) {
	r := &insights.Report{Days: 7, From: "2026-11-26", To: "2026-12-02",
		Answers: insights.AnswerCounts{Total: 12, ByKind: map[string]int64{"model": 9, "degraded": 3},
			Fallback: map[string]int64{"llm_budget_exhausted": 2, "llm_unavailable": 1}},
		Feedback: []insights.FeedbackRow{
			{Kind: "model", Answers: 9, Up: 4, Down: 2, Reasons: map[string]int64{"outdated": 1, "none": 1}},
			{Kind: "retrieval", Reasons: map[string]int64{}},
			{Kind: "degraded", Answers: 3, Down: 1, Reasons: map[string]int64{"unanswered": 1}},
		},
		Searches:  insights.SearchCounts{Total: 40, NoResult: 5, ByChannel: map[string]insights.ChannelCounts{"chat": {Total: 12, NoResult: 1}, "mcp": {Total: 28, NoResult: 4}}},
		Handovers: insights.HandoverCounts{Offered: 3, Called: 1},
		FairUse: insights.FairUseCounts{SharesReached: map[string]int64{"llm": 2}, Paced: map[string]int64{"embedding": 5, "llm": 7},
			ProofOfWork: map[string]int64{"solved": 30, "expired": 1}},
		TopPages:   []insights.PageRow{{URL: "https://example.com/pricing", Title: "Pricing | Rates [2026]", Cited: 7, Top: 11}, {URL: "https://example.com/gone", Cited: 1}},
		NeverCited: insights.PageList{Count: 120, Indexed: 140, Pages: []insights.PageRef{{URL: "https://example.com/faq", Title: "FAQ"}}},
		Daily:      []insights.DayRow{{Day: "2026-12-02", Answers: 12, Up: 4, Down: 3, Searches: 40, NoResult: 5, HandoversOffered: 3, HandoversCalled: 1}},
		Index: insights.IndexSync{LastFullSync: "2026-12-02T09:15:00Z", LeftOut: 30,
			Rebuild: &insights.IndexRebuild{Model: "embeddinggemma", Dimensions: 768, Started: "2026-12-02T10:00:00Z", Done: 250, Total: 1000}},
	}
	var text strings.Builder
	r.WriteText(&text)
	for _, want := range []string{
		"the last 7 days (2026-11-26 to 2026-12-02, UTC)",
		"Answers     12  (model 9, retrieval 0, degraded 3)",
		"fell back to search results: llm_budget_exhausted 2, llm_unavailable 1",
		"model      9 answers, 4 up, 2 down (no reason 1, out of date 1)",
		"degraded   3 answers, 0 up, 1 down (didn't answer 1)",
		"Searches    40, 5 found nothing relevant (12.5 %)",
		"mcp        28, 4 found nothing",
		"Hand-overs  3 offered",
		"Fair use    visitors at their daily share: llm 2; calls the paced budget refused: embedding 5, llm 7; proof of work: expired 1, solved 30",
		"    7 / 11    Pricing | Rates [2026]  https://example.com/pricing",
		"https://example.com/gone (no longer indexed)",
		"Never cited in the last 30 days: 120 of 140 pages",
		"Index       last full sync 2026-12-02T09:15:00Z: 30 pages the sitemap lists left out (over INGEST_MAX_PAGES; the newest are indexed)",
		"… and 119 more",
		"Rebuild     for embeddinggemma (768 dimensions) since 2026-12-02T10:00:00Z: 250 of 1000 chunks have their new vector (25%)",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	var md strings.Builder
	r.WriteMarkdown(&md)
	for _, want := range []string{
		"| model | 9 | 4 | 2 | no reason 1, out of date 1 |",
		"| visitors at their daily share | llm 2 |",
		"| calls the paced budget refused | embedding 5, llm 7 |",
		`| [Pricing \| Rates \[2026\]](https://example.com/pricing) | 7 | 11 |`,
		"| 2026-12-02 | 12 | 4 | 3 | 40 | 5 | 3 | 1 |",
		"| last full sync of the index | 2026-12-02T09:15:00Z |\n| pages the sitemap listed beyond INGEST_MAX_PAGES, left out | 30 |",
		"Rebuild of the index: for embeddinggemma (768 dimensions) since 2026-12-02T10:00:00Z: 250 of 1000 chunks",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown report lacks %q:\n%s", want, md.String())
		}
	}
}
