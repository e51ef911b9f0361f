package sitesearch

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sitetools/sitetools/internal/content"
)

// MaxLinkedPDFs bounds the PDFs one run fetches through links (Ingester.Linked).
const MaxLinkedPDFs = 1000

// linkSet is the links to PDFs that the yielded pages hold, each once, in the order met.
type linkSet struct {
	seen map[string]bool
	urls []string
}

func newLinkSet() *linkSet { return &linkSet{seen: map[string]bool{}} }

func (l *linkSet) add(urls []string) {
	for _, u := range urls {
		if !l.seen[u] {
			l.seen[u] = true
			l.urls = append(l.urls, u)
		}
	}
}

// followLinks walks, with Linked, the PDFs the pages link to that res did not account
// for, and in a full sync the stored PDFs of the source that it did not either; yield
// takes their documents as it took the walk's. It returns res with the second walk's
// outcome added.
func (in *Ingester) followLinks(source string, res WalkResult, links *linkSet, stored map[string]PageState, seen map[string]bool,
	known func(string) (PageState, bool), yield func(*content.Document) error) (WalkResult, error) {
	if in.Linked == nil {
		return res, nil
	}
	done := map[string]bool{}
	for _, list := range [][]string{res.Failed, res.Gone, res.Skipped} {
		for _, u := range list {
			done[u] = true
		}
	}
	for _, r := range res.Rejected {
		done[r.URL] = true
	}
	candidates := slices.Clone(links.urls)
	if !in.Partial {
		var kept []string
		for u, have := range stored {
			if strings.HasSuffix(strings.ToLower(u), ".pdf") && have.Source == source {
				kept = append(kept, u)
			}
		}
		slices.Sort(kept)
		candidates = append(candidates, kept...)
	}
	var urls []string
	for _, u := range candidates {
		if len(urls) == MaxLinkedPDFs {
			break
		}
		if !seen[u] && !done[u] {
			done[u] = true
			urls = append(urls, u)
		}
	}
	if len(urls) == 0 {
		return res, nil
	}
	more, err := in.Linked(urls)(known, yield)
	res.Failed = append(res.Failed, more.Failed...)
	res.Gone = append(res.Gone, more.Gone...)
	res.Skipped = append(res.Skipped, more.Skipped...)
	res.Rejected = append(res.Rejected, more.Rejected...)
	res.BytesFetched += more.BytesFetched
	return res, err
}

// rejected is the report of the documents refused, for IngestStats.String: each with its
// reason, the first ten.
func rejected(list []content.Rejection) string {
	if len(list) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "; %d documents refused:", len(list))
	for i, r := range list {
		if i == 10 {
			fmt.Fprintf(&b, " and %d more", len(list)-i)
			break
		}
		fmt.Fprintf(&b, " %s (%s);", r.URL, r.Reason)
	}
	return strings.TrimSuffix(b.String(), ";")
}
