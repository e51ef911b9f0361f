package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

func (h *hnswResult) text(b *strings.Builder) {
	if h.d.gated {
		fmt.Fprintf(b, "%s, %s (gated): %s vectors of %d dimensions, %d queries, goal ≥ %.2f at the service's ef_search (%d)\n\n",
			hnswName, h.d.key, thousands(h.s.rows), hnswDims, h.s.queries, recallGoal, h.serviceEF)
	} else {
		fmt.Fprintf(b, "%s, %s (informational, no goal): %s vectors of %d dimensions, %d queries; the service's ef_search is %d\n\n",
			hnswName, h.d.key, thousands(h.s.rows), hnswDims, h.s.queries, h.serviceEF)
	}
	rows := [][]string{{"ef_search", "recall@10", "worst query", "goal", "result", "index p50 / p99", "exact p50 / p99"}}
	reach := 0
	for _, l := range h.levels {
		ef := strconv.Itoa(l.ef)
		if l.ef == h.serviceEF {
			ef += " (service)"
		}
		goal, verdict := fmt.Sprintf("≥ %.2f", recallGoal), verdictOf(l.recall >= recallGoal)
		if !h.d.gated {
			goal, verdict = "–", "info"
		}
		if l.recall >= recallGoal && reach == 0 {
			reach = l.ef
		}
		rows = append(rows, []string{ef, fmt.Sprintf("%.3f", l.recall), fmt.Sprintf("%.1f", l.worst), goal, verdict,
			duration(l.p50) + " / " + duration(l.p99), duration(h.exactP50) + " / " + duration(h.exactP99)})
	}
	table(b, rows)
	b.WriteString("\n")
	fmt.Fprintf(b, "- data: %s.%s, %s vectors: %s (seed %d; generator recorded as %q)\n",
		hnswDatabase, h.d.table, thousands(h.s.rows), h.d.about, h.s.seed, h.d.generator)
	fmt.Fprintf(b, "- structure: mean cosine similarity of a query to its exact 1st neighbour %.3f, to its 10th %.3f, "+
		"to rows picked regardless of the query %.3f\n", h.simFirst, h.simTenth, h.simAny)
	if h.structure != nil {
		h.structure.text(b)
	}
	fmt.Fprintf(b, "- index as the service's on chunks.embedding: an untyped `vector` column and the expression index "+
		"`USING hnsw ((embedding::vector(%d)) vector_cosine_ops)`, pgvector's defaults m 16, ef_construction 64\n", hnswDims)
	when := "built in this run"
	if !h.built {
		when = "reused, built " + h.builtAt.UTC().Format("2006-01-02 15:04 UTC")
	}
	fmt.Fprintf(b, "- %s: COPY %s, CREATE INDEX %s (maintenance_work_mem %s, max_parallel_maintenance_workers %s)\n",
		when, h.loadTime.Round(100*time.Millisecond), h.buildTime.Round(100*time.Millisecond), hnswBuildMemory, h.workers)
	for _, n := range h.notices {
		fmt.Fprintf(b, "  - notice: %s\n", n)
	}
	fmt.Fprintf(b, "- both sides run `%s`, the ordering of search_site's vector half: the index side at hnsw.ef_search N (%s), "+
		"the exact side in a transaction with SET LOCAL enable_indexscan = off (%s)\n", h.d.query(), h.plans[0], h.plans[1])
	fmt.Fprintf(b, "- the service runs at hnsw.ef_search %d and hnsw.iterative_scan %s (SEARCH_EF_SEARCH, SEARCH_ITERATIVE_SCAN), "+
		"set by postgres.Open's AfterConnect on every connection and read back from a connection opened the same way; ",
		h.serviceEF, h.serviceScan)
	if reach > 0 {
		fmt.Fprintf(b, "the smallest ef_search measured that reaches %.2f is %d\n", recallGoal, reach)
	} else {
		fmt.Fprintf(b, "no ef_search measured reaches %.2f\n", recallGoal)
	}
	if l := h.service(); h.d.gated && l.poor > 0 {
		fmt.Fprintf(b, "- at the service's ef_search %d of %d queries found fewer than half of their exact top %d (the worst %.1f): on "+
			"clustered data the greedy descent through the graph can settle in a cluster next to the query's own\n",
			l.poor, h.s.queries, hnswK, l.worst)
	}
	switch h.d.key {
	case "mixture":
		b.WriteString("- isotropic clusters: every direction of the 384 is used alike and unrelated vectors are orthogonal, unlike " +
			"embeddings of real text (the site-shaped dataset); harder for the graph at a small ef_search, for information\n")
	case "uniform":
		b.WriteString("- uniformly random directions are the worst case for an approximate index: no clusters, and the nearest " +
			"neighbours are barely nearer than any other point (see the similarities above); embeddings of real text are " +
			"structured, which the gated site-shaped dataset models\n")
	}
	h.filteredText(b)
}

func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + " " + s[i:]
	}
	return s
}

// hnswMethod is the HNSW section's paragraph of the method in docs/benchmarks.md.
const hnswMethod = `**HNSW recall@10** is measured after the load, in a database of its own (` + "`" + hnswDatabase + "`" + `),
on three tables of 100 000 vectors of 384 dimensions from a fixed seed, each indexed as the service
indexes ` + "`chunks.embedding`" + `. The goal (≥ 0.95 at the ` + "`hnsw.ef_search`" + ` the service sets on every
connection, ` + "`SEARCH_EF_SEARCH`" + `) is judged on *site-shaped* vectors, shaped as a sentence model's
vectors of a site's chunks are, by what is published about such models: a common mean direction
(unrelated texts at a cosine similarity of about 0.2, not 0), a hierarchy of 20 areas × 10 topics ×
50 pages × 10 chunks (each level a Gaussian offset), and a decaying spectrum (the variance of
direction i proportional to 1/(i+1), so a few dozen directions carry most of it); queries are about
a page or a topic with more noise than a chunk, and are not rows of the table. The report prints
the cosine similarities this yields (same page, topic, area, unrelated) to compare with a real
model. On the same table, search_site's vector half with a language or a path-prefix filter is
measured with and without pgvector 0.8's iterative scan (` + "`SEARCH_ITERATIVE_SCAN`" + `), as the
service asks for 40 candidates. A Gaussian mixture of 1 000 isotropic clusters and uniformly random
unit vectors, the worst case for an approximate index, are measured too, for information. A table
is kept between runs: a meta table records its generator, seed and size, a matching table is
reused, and otherwise it is loaded anew (COPY) and indexed, and the build time reported. For each
query vector, the ids of the top 10 by the index at a given ` + "`hnsw.ef_search`" + ` are compared with the
exact top 10 of the same query on a sequential scan; recall@10 is the mean overlap. The other
` + "`ef_search`" + ` values show what changing it would buy, and at what latency.
`
