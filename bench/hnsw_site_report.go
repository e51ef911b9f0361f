package main

import (
	"fmt"
	"strconv"
	"strings"
)

// siteAbout says how the site-shaped vectors are made, for the report.
func siteAbout() string {
	top10, top50, pr := spectrumShares()
	return fmt.Sprintf("shaped as a sentence model's vectors of a site's chunks (bench/hnsw_site.go): %d areas × %d topics × %d pages × "+
		"%d chunks; a chunk is the sum of a common mean direction (a unit vector, pcg(seed, 5)) and of Gaussian offsets of its area, "+
		"topic and page (drawn once, pcg(seed, 5)) and of its own (pcg(seed, 6)), with shares of its expected squared length of "+
		"%.2f, %.2f, %.2f, %.2f and %.2f, then normalised; every offset has the variance of direction i proportional to 1/(i+1)^%.1f, "+
		"so the 10 largest of the %d directions hold %.0f %% of the variance, the 50 largest %.0f %%, and the participation ratio "+
		"(Σλ)²/Σλ² is %.0f; a query picks a page uniformly and is, one in two, about that page (its point plus noise of share %.2f, "+
		"a chunk's is %.2f) or about its topic only (the topic's point plus noise of share %.2f), pcg(seed, 7), so no query is a "+
		"row of the table; row i (from 0) is chunk i mod %d of page ⌊i/%d⌋, pages alternate between lang 'en' and 'de', and a page's "+
		"path is /aAA/tT/pP",
		siteAreas, siteTopics, sitePages, siteChunks, siteMean, siteArea, siteTopic, sitePage, siteChunk, siteSpectrum, hnswDims,
		100*top10, 100*top50, pr, siteQueryNoise, siteChunk, siteQueryNoise+sitePage, siteChunks, siteChunks)
}

// structureText prints the cosine similarities the site-shaped generator yields.
func (st *siteStructure) text(b *strings.Builder) {
	fmt.Fprintf(b, "- cosine similarity, median over a sample (every chunk of pages 0 and 25 of every other topic, 2 000 chunks): "+
		"two chunks of the same page %.2f, of the same topic %.2f, of the same area %.2f, unrelated (other areas) %.2f; a page "+
		"query to its page's chunks %.2f, to other chunks of its topic %.2f, to chunks of other areas %.2f. For comparison, as "+
		"published: text-embedding-3 gives unrelated words about 0.2 and related ones about 0.45, text-embedding-3-large a "+
		"paragraph and its article 0.66, a relevant question and the article 0.44, an irrelevant one 0.08; e5 and bge put "+
		"every pair between about 0.6 and 1 (a stronger common direction), all-MiniLM-L6-v2 unrelated sentences near 0.05\n",
		st.samePage, st.sameTopic, st.sameArea, st.unrelated, st.queryPage, st.queryTopic, st.queryOther)
}

// filteredText prints the filtered queries' table.
func (h *hnswResult) filteredText(b *strings.Builder) {
	if len(h.filtered) == 0 {
		return
	}
	fmt.Fprintf(b, "\nFiltered, as search_site's vector half with a language or path prefix: %d candidates asked for, recall@10 of "+
		"the first 10 by distance against the exact first 10 under the same filter\n\n", hnswCandidates)
	rows := [][]string{{"filter", "iterative scan", "ef_search", "recall@10", "worst query", "returned (of 40)", "fewer than 10", "index p50 / p99", "exact p50 / p99"}}
	for _, f := range h.filtered {
		for si, scan := range f.scans {
			for _, l := range f.levels[si] {
				ef := strconv.Itoa(l.ef)
				if l.ef == h.serviceEF && scan == h.serviceScan {
					ef += " (service)"
				}
				rows = append(rows, []string{f.f.name, scan, ef, fmt.Sprintf("%.3f", l.recall), fmt.Sprintf("%.1f", l.worst),
					fmt.Sprintf("%.1f", l.returned), strconv.Itoa(l.short), duration(l.p50) + " / " + duration(l.p99),
					duration(f.exactP50) + " / " + duration(f.exactP99)})
			}
		}
	}
	table(b, rows)
	b.WriteString("\n")
	for _, f := range h.filtered {
		fmt.Fprintf(b, "- %s: %s; planned for the first query's arguments as the service plans its statement: %s\n", f.f.name, f.f.about, f.plan)
	}
	fmt.Fprintf(b, "- the statement, on one table where the service joins chunks to pages: `%s`; the exact side runs it with SET LOCAL "+
		"enable_indexscan = off; hnsw.max_scan_tuples, the iterative scan's limit of tuples visited, is %s (pgvector's default); "+
		"ef_search above %d is not measured with filters\n",
		strings.Join(strings.Fields(h.d.filteredSQL()), " "), h.filtered[0].maxScanTuples, hnswFilteredMaxEF)
}
