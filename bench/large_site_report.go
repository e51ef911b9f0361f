package main

import (
	"fmt"
	"strings"
	"time"
)

// largeReport is the large-site section's markdown and its missed goals.
// idle is serve's resident set once ready, at the start and when started again.
func largeReport(n int, bin *serveBinary, site *largeSite, idle [2]largeIdle, results []largeResult) sectionResult {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", largeSiteName)
	fmt.Fprintf(&b, "The real binary (`go build -ldflags '-s -w'`, built in %s) runs `sitetools serve` as a subprocess on a database "+
		"of its own (`%s`, created and migrated first, dropped after), with INGEST_SITEMAP_URL on a generated site served by an "+
		"httptest server in the bench process: %s pages (a title and two or three paragraphs of 90 to 150 words each, one "+
		"chunk, rendered when asked for, with an ETag and a Last-Modified, answering If-None-Match and If-Modified-Since with "+
		"304) behind a sitemap index of %d gzip urlsets (streamed, gzip-compressed as they are written), INGEST_INTERVAL=0 and "+
		"FETCH_ALLOW_PRIVATE=127.0.0.1/32. Each sync is a whole-site publish hook (`POST /admin/reindex {\"all\": true}` on the "+
		"admin listener), followed with `GET /admin/reindex/{id}`; its time is the job's, from its start to its end as serve "+
		"recorded them. Embeddings go to the fake provider (llmtest.Server in the bench process, %d dimensions, over HTTP, "+
		"EMBEDDINGS_PROVIDER=openai). Serve's resident set is read from /proc/PID/status: VmRSS every %s, and VmHWM, reset at "+
		"the start of each sync (`echo 5 > /proc/PID/clear_refs`), at its end: the kernel's own peak of that sync. The bombs: "+
		"the index lists one gzip file instead of the urlsets, %s on the wire decoding to %d MB of XML (one entry over and over: "+
		"small tokens, which only the protocol's 50 MB a file stops), and the same kind of file decoding to %d GB, sent with "+
		"Content-Encoding: gzip (%s on the wire, whose transport decoding serve's client does).\n\n",
		bin.took.Round(100*time.Millisecond), largeDatabase, thousands(n), site.files(), hnswDims, largeSample,
		kilobytes(len(site.bomb)), largeBombMB, largeDoubleBombMB>>10, kilobytes(len(site.double)))
	fmt.Fprintf(&b, "Serve once ready, before any sync: VmRSS %s, VmHWM %s; started again on the index of %s pages before the "+
		"bombs: VmRSS %s, VmHWM %s.\n\n", megabytes(idle[0].rss), megabytes(idle[0].hwm), thousands(n), megabytes(idle[1].rss), megabytes(idle[1].hwm))
	table(&b, largeTable(results))
	b.WriteString("\n")
	missed := largeGoals(&b, n, idle[0], results)
	largeNotes(&b, n, results)
	return sectionResult{text: b.String(), missed: missed}
}

func kilobytes(n int) string { return fmt.Sprintf("%.1f KB", float64(n)/1024) }

func largeTable(results []largeResult) [][]string {
	out := [][]string{{"sync", "outcome", "took", "pages/s", "added", "unchanged (304 / not fetched)", "bodies sent", "304s", "connections",
		"embedding requests", "RSS before", "peak RSS (VmHWM)", "largest VmRSS read", "serve CPU"}}
	for _, r := range results {
		p := r.job.Pages
		outcome := r.job.State
		pps := "–"
		if r.job.State == "done" && r.took > 0 {
			pps = fmt.Sprintf("%.0f", float64(p.Added+p.Updated+p.Unchanged)/r.took.Seconds())
		}
		out = append(out, []string{r.phase.label, outcome, fmt.Sprintf("%.2f s", r.took.Seconds()), pps, thousands(p.Added),
			fmt.Sprintf("%s (%s / %s)", thousands(p.Unchanged), thousands(p.NotModified), thousands(p.Skipped)),
			thousands(int(r.bodies)), thousands(int(r.notMod)), thousands(int(r.conns)), thousands(r.requests), megabytes(r.before), megabytes(r.hwm),
			fmt.Sprintf("%s (%d reads)", megabytes(r.sampled), r.samples), seconds(r.cpu)})
	}
	return out
}

// largeGoals writes the goals with their verdicts and returns the missed ones.
func largeGoals(b *strings.Builder, n int, idle largeIdle, results []largeResult) []string {
	var missed []string
	verdict := func(goal string, pass bool, got string) {
		v := "PASS"
		if !pass {
			v = "MISS"
			missed = append(missed, fmt.Sprintf("%s: %s: %s", largeSiteName, goal, got))
		}
		fmt.Fprintf(b, "- %s: %s — %s\n", goal, got, v)
	}
	b.WriteString("Goals:\n\n")
	peak, where := idle.hwm, "start-up"
	for _, r := range results {
		if v := max(r.hwm, r.sampled); v > peak {
			peak, where = v, r.phase.label
		}
	}
	verdict(fmt.Sprintf("serve's RSS ≤ %s throughout", megabytes(largeRSSGoal)), peak <= largeRSSGoal,
		fmt.Sprintf("at most %s (%s)", megabytes(peak), where))
	first := results[0]
	verdict(fmt.Sprintf("the first sync indexes all %s pages", thousands(n)),
		first.job.State == "done" && first.job.Pages.Added == n && first.indexed == n,
		fmt.Sprintf("%s, %s added, %d failed, %s in the index", first.job.State, thousands(first.job.Pages.Added), first.job.Pages.Failed, thousands(first.indexed)))
	for _, i := range []int{1, 3} {
		r := results[i]
		x := first.took.Seconds() / r.took.Seconds()
		verdict(fmt.Sprintf("%s: ≥ %.0f× faster than the first, no body, no embedding", r.phase.label, largeAgainX),
			x >= largeAgainX && r.bodies == 0 && r.requests == 0 && r.job.Pages.Unchanged == n,
			fmt.Sprintf("%.1f× (%s → %.2f s), %d bodies, %d embedding requests, %s of %s unchanged",
				x, seconds(first.took), r.took.Seconds(), r.bodies, r.requests, thousands(r.job.Pages.Unchanged), thousands(n)))
	}
	for _, r := range results[4:] {
		above := r.hwm - r.before
		verdict(fmt.Sprintf("%s: refused, the index kept, peak < %s above the RSS before", r.phase.label, megabytes(largeBombGoal)),
			r.job.State == "failed" && strings.Contains(r.job.Error, "larger than") && r.logged && r.indexed == n && above < largeBombGoal,
			fmt.Sprintf("%s (%q), logged: %v, %s pages still indexed, peak %s, %s above the %s before",
				r.job.State, r.job.Error, r.logged, thousands(r.indexed), megabytes(r.hwm), signedMB(above), megabytes(r.before)))
	}
	b.WriteString("\n")
	return missed
}

func signedMB(b int64) string {
	if b < 0 {
		return fmt.Sprintf("-%.1f MB", float64(-b)/(1<<20))
	}
	return fmt.Sprintf("%.1f MB", float64(b)/(1<<20))
}

// largeNotes puts the figures in the units docs/large-sites.md gives them in.
func largeNotes(b *strings.Builder, n int, results []largeResult) {
	first := results[0]
	per := time.Duration(float64(first.took) * 10_000 / float64(n))
	fmt.Fprintf(b, "- the first sync: %s per 10 000 pages, %.0f pages/s, %s of serve's CPU; the rest of the two cores went to "+
		"PostgreSQL (each chunk's tsvector, the GIN and B-tree entries, the HNSW index built at the end), the fake provider "+
		"and the site\n", seconds(per), float64(n)/first.took.Seconds(), seconds(first.cpu))
	t := results[2]
	fmt.Fprintf(b, "- the sync after <lastmod> left the sitemap (%.2f s) asks for every page with If-None-Match and "+
		"If-Modified-Since and gets 304s, but also rewrites each page's stored <lastmod> (one UPDATE a page); the next one, "+
		"unchanged, is the 304 path alone\n", t.took.Seconds())
	fmt.Fprintf(b, "- reproduce: `go run ./bench -run '^%s$' -out ''` (add `-large-site-pages 10000` for a shorter run)\n", largeSiteName)
}
