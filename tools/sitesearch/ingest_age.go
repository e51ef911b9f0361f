package sitesearch

import (
	"fmt"
	"hash/fnv"
	"time"
)

func (in *Ingester) now() time.Time {
	if in.Now != nil {
		return in.Now()
	}
	return time.Now()
}

// markDue sets Due on the stored pages not fetched in full for longer than their share
// of MaxAge (dueAge).
func (in *Ingester) markDue(stored map[string]PageState) {
	if in.MaxAge <= 0 {
		return
	}
	now := in.now()
	for u, st := range stored {
		if now.Sub(st.Fetched) >= dueAge(u, in.MaxAge) {
			st.Due = true
			stored[u] = st
		}
	}
}

// dueAge is how long the page at u may go without being fetched in full: a share of
// maxAge from half to all of it, fixed by the URL, so that the pages of a site first
// stored in one run come due over half of maxAge rather than in one run.
func dueAge(u string, maxAge time.Duration) time.Duration {
	h := fnv.New64a()
	h.Write([]byte(u))
	share := float64(h.Sum64()>>11) / (1 << 53) // [0, 1)
	return maxAge/2 + time.Duration(share*float64(maxAge/2))
}

// fetchedNow is v of a page fetched in full now.
func (in *Ingester) fetchedNow(v Validators) Validators {
	v.Fetched = in.now()
	return v
}

// leftOut is what IngestStats.String says of pages left out.
func leftOut(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d listed pages left out (over INGEST_MAX_PAGES, the newest kept)", n)
}
