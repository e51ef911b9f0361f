package insights

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// reasonLabels are the words reports use for the reasons of a thumbs-down.
var reasonLabels = map[string]string{"wrong": "wrong", "outdated": "out of date", "unanswered": "didn't answer", "other": "other", ReasonNone: "no reason"}

// WriteText writes r for a terminal.
func (r *Report) WriteText(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	if r.Days == 1 {
		p("sitetools report: today (%s, UTC)\n\n", r.To)
	} else {
		p("sitetools report: the last %d days (%s to %s, UTC)\n\n", r.Days, r.From, r.To)
	}
	p("Answers     %d  (%s)\n", r.Answers.Total, kindCounts(r.Answers.ByKind))
	if len(r.Answers.Fallback) > 0 {
		p("  fell back to search results: %s\n", joinCounts(r.Answers.Fallback, nil))
	}
	p("Feedback\n")
	for _, f := range r.Feedback {
		p("  %-10s %s\n", f.Kind, f.summary())
	}
	p("Searches    %d, %d found nothing relevant%s\n", r.Searches.Total, r.Searches.NoResult, share(r.Searches.NoResult, r.Searches.Total))
	for _, ch := range slices.Sorted(maps.Keys(r.Searches.ByChannel)) {
		c := r.Searches.ByChannel[ch]
		p("  %-10s %d, %d found nothing\n", ch, c.Total, c.NoResult)
	}
	p("Hand-overs  %d offered (an answer pointed to the contact page), %d called (a visitor's assistant filled in the contact form)\n", r.Handovers.Offered, r.Handovers.Called)
	p("Fair use    visitors at their daily share: %s; calls the paced budget refused: %s; proof of work: %s\n",
		fairUseCounts(r.FairUse.SharesReached), fairUseCounts(r.FairUse.Paced), fairUseCounts(r.FairUse.ProofOfWork))
	p("Index       %s\n", r.Index.summary())
	if rb := r.Index.Rebuild; rb != nil {
		p("Rebuild     %s\n", rb.summary())
	}
	p("\n")
	p("Most cited pages (cited in answers / top search result)\n")
	if len(r.TopPages) == 0 {
		p("  none yet\n")
	}
	for _, pg := range r.TopPages {
		p("  %5d / %-5d %s\n", pg.Cited, pg.Top, pageName(pg.URL, pg.Title))
	}
	p("\nNever cited in the last %d days: %d of %d pages\n", NeverCitedDays, r.NeverCited.Count, r.NeverCited.Indexed)
	for _, pg := range r.NeverCited.Pages {
		p("  %s\n", pageName(pg.URL, pg.Title))
	}
	if r.NeverCited.Count > len(r.NeverCited.Pages) {
		p("  … and %d more\n", r.NeverCited.Count-len(r.NeverCited.Pages))
	}
}

// WriteMarkdown writes r as Markdown, for a wiki page or a ticket.
func (r *Report) WriteMarkdown(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("# sitetools report: %s to %s (UTC)\n\n", r.From, r.To)
	p("| | count |\n|---|---:|\n")
	p("| answers | %d (%s) |\n", r.Answers.Total, kindCounts(r.Answers.ByKind))
	p("| fell back to search results | %s |\n", cmp.Or(joinCounts(r.Answers.Fallback, nil), "0"))
	p("| searches | %d |\n| found nothing relevant | %d%s |\n", r.Searches.Total, r.Searches.NoResult, share(r.Searches.NoResult, r.Searches.Total))
	p("| hand-overs offered / called | %d / %d |\n", r.Handovers.Offered, r.Handovers.Called)
	p("| visitors at their daily share | %s |\n| calls the paced budget refused | %s |\n| proof of work | %s |\n",
		fairUseCounts(r.FairUse.SharesReached), fairUseCounts(r.FairUse.Paced), fairUseCounts(r.FairUse.ProofOfWork))
	p("| last full sync of the index | %s |\n| pages the sitemap listed beyond INGEST_MAX_PAGES, left out | %d |\n\n",
		cmp.Or(r.Index.LastFullSync, "none yet"), r.Index.LeftOut)
	if rb := r.Index.Rebuild; rb != nil {
		p("Rebuild of the index: %s\n\n", rb.summary())
	}
	p("## Feedback\n\n| answer kind | answers | up | down | reasons of the thumbs-down |\n|---|---:|---:|---:|---|\n")
	for _, f := range r.Feedback {
		p("| %s | %d | %d | %d | %s |\n", f.Kind, f.Answers, f.Up, f.Down, cmp.Or(joinCounts(f.Reasons, reasonLabels), "–"))
	}
	p("\n## Most cited pages\n\n| page | cited in answers | top search result |\n|---|---:|---:|\n")
	for _, pg := range r.TopPages {
		p("| %s | %d | %d |\n", mdLink(pg.URL, pg.Title), pg.Cited, pg.Top)
	}
	p("\n## Never cited in the last %d days (%d of %d pages)\n\n", NeverCitedDays, r.NeverCited.Count, r.NeverCited.Indexed)
	for _, pg := range r.NeverCited.Pages {
		p("- %s\n", mdLink(pg.URL, pg.Title))
	}
	p("\n## By day\n\n| day | answers | up | down | searches | found nothing | hand-overs offered | called |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, d := range r.Daily {
		p("| %s | %d | %d | %d | %d | %d | %d | %d |\n", d.Day, d.Answers, d.Up, d.Down, d.Searches, d.NoResult, d.HandoversOffered, d.HandoversCalled)
	}
}

// summary says when the last full sync finished and what it left out.
func (x IndexSync) summary() string {
	if x.LastFullSync == "" {
		return "no full sync with the site yet"
	}
	if x.LeftOut == 0 {
		return "last full sync " + x.LastFullSync + ", every page the sitemap lists indexed"
	}
	return fmt.Sprintf("last full sync %s: %d pages the sitemap lists left out (over INGEST_MAX_PAGES; the newest are indexed)", x.LastFullSync, x.LeftOut)
}

// summary says what a rebuild is for and how far it got.
func (x IndexRebuild) summary() string {
	share := 100.0
	if x.Total > 0 {
		share = 100 * float64(x.Done) / float64(x.Total)
	}
	return fmt.Sprintf("for %s (%d dimensions) since %s: %d of %d chunks have their new vector (%.0f%%); search answers from the live vectors until it switches",
		x.Model, x.Dimensions, x.Started, x.Done, x.Total, share)
}

// fairUseCounts lists fair-use counts by budget kind or outcome, "0" for none.
func fairUseCounts(m map[string]int64) string {
	return cmp.Or(joinCounts(m, nil), "0")
}

func (f FeedbackRow) summary() string {
	s := fmt.Sprintf("%d answers, %d up, %d down", f.Answers, f.Up, f.Down)
	if f.Down > 0 {
		s += " (" + joinCounts(f.Reasons, reasonLabels) + ")"
	}
	return s
}

func kindCounts(m map[string]int64) string {
	parts := make([]string, 0, len(Kinds))
	for _, k := range Kinds {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// joinCounts lists m's non-zero counts by key, with labels where given.
func joinCounts(m map[string]int64, labels map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", cmp.Or(labels[k], k), m[k]))
		}
	}
	return strings.Join(parts, ", ")
}

func share(n, of int64) string {
	if of == 0 {
		return ""
	}
	return fmt.Sprintf(" (%.1f %%)", 100*float64(n)/float64(of))
}

func pageName(url, title string) string {
	if title == "" {
		return url + " (no longer indexed)"
	}
	return title + "  " + url
}

func mdLink(url, title string) string {
	if title == "" {
		title = url + " (no longer indexed)"
	}
	r := strings.NewReplacer("|", `\|`, "[", `\[`, "]", `\]`)
	return "[" + r.Replace(title) + "](" + strings.ReplaceAll(url, " ", "%20") + ")"
}
