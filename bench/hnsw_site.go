package main

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// The site-shaped dataset: vectors shaped as a sentence-embedding model's vectors of a
// site's chunks are, by what is published about such models rather than by what makes
// any ef_search pass. Three properties, each a parameter below:
//
//   - Anisotropy: every vector shares a common mean direction, so that texts with nothing
//     in common still have a cosine similarity of about 0.2, as with text-embedding-3 and
//     nomic-embed-text (the middle of the 0.1–0.3 reported for them; e5 and bge put
//     unrelated texts near 0.7, a stronger mean that rescales the similarities without
//     changing which rows are nearest).
//   - Hierarchy: the site is areas ⊃ topics ⊃ pages ⊃ chunks, laid out as the generated
//     site of the scale sections (bench/scale_corpus.go): a chunk is its area's offset,
//     its topic's, its page's and its own, each a Gaussian draw.
//   - Low intrinsic dimensionality: every draw has a decaying spectrum, the variance of
//     direction i proportional to 1/(i+1)^siteSpectrum, so that the ten largest of the
//     384 directions hold about 45 % of the variance (40–46 % is what is reported for the
//     ten first principal components of bge-small and all-MiniLM sentence embeddings) and
//     the participation ratio, the number of directions the variance effectively uses, is
//     about 26 rather than 384. Cosine similarity and the HNSW graph do not depend on the
//     basis, so the directions are the coordinate axes.
//
// Queries are short texts: a query about a page is its page's point (area + topic + page
// offsets and the mean) with noise of its own larger than a chunk's, and a broad query is
// its topic's point with more noise still; no query is a row of the table.
const (
	siteAreas  = 20
	siteTopics = 10 // per area
	sitePages  = 50 // per topic
	siteChunks = 10 // per page
	siteRows   = siteAreas * siteTopics * sitePages * siteChunks
	// The shares of a chunk's expected squared length each part contributes; they sum to 1,
	// so that the expected cosine similarity of two chunks is the sum of the shares they
	// have in common: unrelated 0.20, same area 0.30, same topic 0.45, same page 0.65.
	siteMean  = 0.20
	siteArea  = 0.10
	siteTopic = 0.15
	sitePage  = 0.20
	siteChunk = 0.35
	// siteQueryNoise is a page query's own part (a chunk's is siteChunk): a query of a few
	// words says less than a chunk of its page and says it otherwise. A broad query has
	// no page part and siteQueryNoise + sitePage of its own, so that both have the same
	// expected length.
	siteQueryNoise = 0.80
	// siteBroadQueries is the share of queries aimed at a topic rather than at one page.
	siteBroadQueries = 0.5
	siteSpectrum     = 1.0
	siteGenerator    = "site v1: 20×10×50×10, shares mean 0.20 area 0.10 topic 0.15 page 0.20 chunk 0.35, query 0.80, " +
		"broad 0.5, spectrum 1/(i+1)^1.0; centres pcg(seed, 5), rows pcg(seed, 6), queries pcg(seed, 7), float32"
)

// siteModel holds the site's fixed parts: the mean direction and every area's, topic's
// and page's offset, all drawn from pcg(seed, 5).
type siteModel struct {
	scale  []float64 // per direction: the standard deviation of a unit-share draw
	mean   []float64 // unit vector
	areas  [][]float64
	topics [][]float64 // area*siteTopics + topic
	pages  [][]float64 // topic*sitePages + page
}

// siteSpectrumScale is the standard deviation per direction of a draw whose expected
// squared length is 1.
func siteSpectrumScale() []float64 {
	s := make([]float64, hnswDims)
	var sum float64
	for i := range s {
		s[i] = math.Pow(float64(i+1), -siteSpectrum)
		sum += s[i]
	}
	for i := range s {
		s[i] = math.Sqrt(s[i] / sum)
	}
	return s
}

func newSiteModel(seed uint64) *siteModel {
	rng := rand.New(rand.NewPCG(seed, 5))
	m := &siteModel{scale: siteSpectrumScale()}
	m.mean = make([]float64, hnswDims)
	var sum float64
	for i := range m.mean {
		m.mean[i] = rng.NormFloat64()
		sum += m.mean[i] * m.mean[i]
	}
	for i := range m.mean {
		m.mean[i] /= math.Sqrt(sum)
	}
	draw := func(n int) [][]float64 {
		out := make([][]float64, n)
		for j := range out {
			out[j] = m.draw(rng, make([]float64, hnswDims))
		}
		return out
	}
	m.areas = draw(siteAreas)
	m.topics = draw(siteAreas * siteTopics)
	m.pages = draw(siteAreas * siteTopics * sitePages)
	return m
}

// draw fills v with a unit-share draw of the spectrum.
func (m *siteModel) draw(rng *rand.Rand, v []float64) []float64 {
	for i := range v {
		v[i] = m.scale[i] * rng.NormFloat64()
	}
	return v
}

// point writes into x the sum of the mean and of the offsets of the page's area, topic and
// (unless page < 0) page, each scaled by the square root of its share.
func (m *siteModel) point(x []float64, topic, page int) {
	area := topic / siteTopics
	for i := range x {
		x[i] = math.Sqrt(siteMean)*m.mean[i] + math.Sqrt(siteArea)*m.areas[area][i] + math.Sqrt(siteTopic)*m.topics[topic][i]
		if page >= 0 {
			x[i] += math.Sqrt(sitePage) * m.pages[page][i]
		}
	}
}

// finish adds share × a draw of rng to x, normalises it and writes it into buf.
func (m *siteModel) finish(rng *rand.Rand, x []float64, share float64, buf []float32) []float32 {
	var sum float64
	for i := range x {
		x[i] += math.Sqrt(share) * m.scale[i] * rng.NormFloat64()
		sum += x[i] * x[i]
	}
	inv := 1 / math.Sqrt(sum)
	for i := range buf {
		buf[i] = float32(x[i] * inv)
	}
	return buf
}

// siteRowsOf returns the generator of the table's rows in id order: row i (from 0) is
// chunk i%10 of page i/10, whose topic is i/500 and area i/5000.
func siteRowsOf(seed uint64) func([]float32) []float32 {
	m := newSiteModel(seed)
	rng := rand.New(rand.NewPCG(seed, 6))
	x := make([]float64, hnswDims)
	i := 0
	return func(buf []float32) []float32 {
		page := (i / siteChunks) % (siteAreas * siteTopics * sitePages)
		m.point(x, page/sitePages, page)
		i++
		return m.finish(rng, x, siteChunk, buf)
	}
}

// siteQuery is a query vector and what it is about.
type siteQuery struct {
	vec         []float32
	area, topic int
	page        int // -1: a broad query, about its topic
}

// siteQueriesOf returns the generator of the queries: each picks a page uniformly, and is
// about that page or, one in 1/siteBroadQueries, about its topic only.
func siteQueriesOf(seed uint64) func() siteQuery {
	m := newSiteModel(seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	x := make([]float64, hnswDims)
	return func() siteQuery {
		page := rng.IntN(siteAreas * siteTopics * sitePages)
		q := siteQuery{topic: page / sitePages, page: page}
		q.area = q.topic / siteTopics
		share := siteQueryNoise
		if rng.Float64() < siteBroadQueries {
			q.page, share = -1, siteQueryNoise+sitePage
		}
		m.point(x, q.topic, q.page)
		q.vec = m.finish(rng, x, share, make([]float32, hnswDims))
		return q
	}
}

// siteRowMeta is the language and path of row id (from 1): pages alternate between
// English and German, and a page's path starts with its area's.
func siteRowMeta(id int) (lang, path string) {
	page := (id - 1) / siteChunks
	topic := page / sitePages
	lang = "en"
	if page%2 == 1 {
		lang = "de"
	}
	return lang, fmt.Sprintf("%s/t%d/p%d", siteAreaPath(topic/siteTopics), topic%siteTopics, page%sitePages)
}

// siteAreaPath is the path prefix of an area's pages.
func siteAreaPath(area int) string { return fmt.Sprintf("/a%02d/", area) }

// siteStructure is the distribution of cosine similarities the generator yields, for a
// reader to compare with a real model's.
type siteStructure struct {
	// Medians of pairs of chunks: same page, same topic (other page), same area (other
	// topic), unrelated (other area); and of a page query to its page's chunks, to other
	// chunks of its topic, and to chunks of other areas.
	samePage, sameTopic, sameArea, unrelated float64
	queryPage, queryTopic, queryOther        float64
	top10, top50, participation              float64 // of the spectrum
}

// measureSiteStructure draws a sample of the rows (every chunk of pages 0 and 25 of every
// other topic: 2 000 chunks, 100 topics, every area) and 400 page queries, and reports
// the medians.
func measureSiteStructure(seed uint64) siteStructure {
	type row struct {
		v    []float32
		page int
	}
	var sample []row
	next := siteRowsOf(seed)
	for i := range siteRows {
		v := next(make([]float32, hnswDims))
		if page := i / siteChunks; page%25 == 0 && (page/sitePages)%2 == 0 {
			sample = append(sample, row{v, page})
		}
	}
	var st siteStructure
	var pairs [4][]float64
	for i, a := range sample {
		for _, b := range sample[i+1:] {
			k := 3 // unrelated
			switch {
			case a.page == b.page:
				k = 0
			case a.page/sitePages == b.page/sitePages:
				k = 1
			case a.page/(sitePages*siteTopics) == b.page/(sitePages*siteTopics):
				k = 2
			}
			pairs[k] = append(pairs[k], cosine(a.v, b.v))
		}
	}
	st.samePage, st.sameTopic, st.sameArea, st.unrelated = median(pairs[0]), median(pairs[1]), median(pairs[2]), median(pairs[3])
	var qs [3][]float64
	queries := siteQueriesOf(seed)
	for n := 0; n < 400; {
		q := queries()
		if q.page < 0 {
			continue
		}
		n++
		for _, r := range sample {
			switch {
			case r.page == q.page:
				qs[0] = append(qs[0], cosine(q.vec, r.v))
			case r.page/sitePages == q.topic:
				qs[1] = append(qs[1], cosine(q.vec, r.v))
			case r.page/(sitePages*siteTopics) != q.area:
				qs[2] = append(qs[2], cosine(q.vec, r.v))
			}
		}
	}
	st.queryPage, st.queryTopic, st.queryOther = median(qs[0]), median(qs[1]), median(qs[2])
	st.top10, st.top50, st.participation = spectrumShares()
	return st
}

// spectrumShares is the share of the variance (before normalisation, the mean aside) the
// 10 and the 50 largest directions hold, and the participation ratio (Σλ)²/Σλ².
func spectrumShares() (top10, top50, participation float64) {
	s := siteSpectrumScale()
	var sum, sq float64
	for i, x := range s {
		v := x * x
		sum += v
		sq += v * v
		if i < 10 {
			top10 += v
		}
		if i < 50 {
			top50 += v
		}
	}
	return top10 / sum, top50 / sum, sum * sum / sq
}

func cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return dot / math.Sqrt(na*nb)
}
