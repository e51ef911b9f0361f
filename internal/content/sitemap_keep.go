package content

import (
	"container/heap"
	"time"
)

// sitemapKeep is the subset of a sitemap's URLs an ingest takes: every one up to max,
// and past it the max newest. It holds at most max URLs whatever the sitemap's size:
// while there is room, in a map of their <lastmod>; once full, in a heap as well, the
// one to give up next (the oldest) at its top.
type sitemapKeep struct {
	max     int
	lastmod map[string]time.Time    // while there is room
	byURL   map[string]*sitemapKept // once full: the URLs in the heap
	heap    sitemapHeap
	leftOut int
}

type sitemapKept struct {
	SitemapEntry
	i int // in the heap
}

func newSitemapKeep(max int) *sitemapKeep {
	return &sitemapKeep{max: max, lastmod: map[string]time.Time{}}
}

// newer orders the pages of a sitemap for the subset: the later <lastmod> first (none
// is the oldest), then the first by URL, so that the same sitemap always gives the same
// subset.
func newer(a, b SitemapEntry) bool {
	if !a.Lastmod.Equal(b.Lastmod) {
		return a.Lastmod.After(b.Lastmod)
	}
	return a.URL < b.URL
}

func (k *sitemapKeep) has(u string) bool {
	if k.byURL == nil {
		_, ok := k.lastmod[u]
		return ok
	}
	_, ok := k.byURL[u]
	return ok
}

// add takes a URL the sitemap lists: a URL kept already keeps the later <lastmod>; a
// new one is kept while there is room, and past it in place of the oldest kept when it
// is newer. Whatever is not kept counts as left out.
func (k *sitemapKeep) add(u string, lastmod time.Time) {
	if k.byURL == nil {
		if old, ok := k.lastmod[u]; ok || len(k.lastmod) < k.max {
			if !ok || lastmod.After(old) {
				k.lastmod[u] = lastmod
			}
			return
		}
		k.toHeap()
	}
	if e, ok := k.byURL[u]; ok {
		if lastmod.After(e.Lastmod) {
			e.Lastmod = lastmod
			heap.Fix(&k.heap, e.i)
		}
		return
	}
	k.leftOut++
	e := SitemapEntry{URL: u, Lastmod: lastmod}
	oldest := k.heap[0]
	if !newer(e, oldest.SitemapEntry) {
		return
	}
	delete(k.byURL, oldest.URL)
	oldest.SitemapEntry = e // the heap's element, reused
	heap.Fix(&k.heap, 0)
	k.byURL[u] = oldest
}

// toHeap moves the URLs kept from the map into the heap, once it is full.
func (k *sitemapKeep) toHeap() {
	k.byURL = make(map[string]*sitemapKept, len(k.lastmod))
	k.heap = make(sitemapHeap, 0, len(k.lastmod))
	for u, lastmod := range k.lastmod {
		e := &sitemapKept{SitemapEntry: SitemapEntry{URL: u, Lastmod: lastmod}, i: len(k.heap)}
		k.heap = append(k.heap, e)
		k.byURL[u] = e
	}
	k.lastmod = nil
	heap.Init(&k.heap)
}

// entries returns the URLs kept, in no order.
func (k *sitemapKeep) entries() []SitemapEntry {
	if k.byURL == nil {
		out := make([]SitemapEntry, 0, len(k.lastmod))
		for u, lastmod := range k.lastmod {
			out = append(out, SitemapEntry{URL: u, Lastmod: lastmod})
		}
		return out
	}
	out := make([]SitemapEntry, len(k.heap))
	for i, e := range k.heap {
		out[i] = e.SitemapEntry
	}
	return out
}

// sitemapHeap is a heap of the kept URLs, the oldest at the top.
type sitemapHeap []*sitemapKept

func (h sitemapHeap) Len() int           { return len(h) }
func (h sitemapHeap) Less(i, j int) bool { return newer(h[j].SitemapEntry, h[i].SitemapEntry) }
func (h sitemapHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].i, h[j].i = i, j
}
func (h *sitemapHeap) Push(x any) {
	e := x.(*sitemapKept)
	e.i = len(*h)
	*h = append(*h, e)
}
func (h *sitemapHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
