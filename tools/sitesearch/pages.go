package sitesearch

import (
	"context"
	"net/url"
	"strings"
)

// PageFinder finds one indexed page by absolute URL or by path; nil when there is none.
// Index is one; so is what renders the pages for agents (internal/postgres.SitePages).
type PageFinder interface {
	Page(ctx context.Context, urlOrPath string) (*StoredPage, error)
}

// FindPage finds the page someone names, as get_page does and every rendering of a page
// from the index must: by its absolute URL or its path, without a query or fragment, and
// an absolute URL of this site whose stored form differs (host, scheme) by its path.
// nil when the index holds no such page.
func FindPage(ctx context.Context, idx PageFinder, urlOrPath string) (*StoredPage, error) {
	key := strings.TrimSpace(urlOrPath)
	if u, err := url.Parse(key); err == nil && u.Path != "" && (u.Fragment != "" || u.RawQuery != "") {
		u.Fragment, u.RawQuery = "", ""
		key = u.String()
	}
	p, err := idx.Page(ctx, key)
	if err == nil && p == nil {
		if u, perr := url.Parse(key); perr == nil && u.IsAbs() && u.Path != "" {
			p, err = idx.Page(ctx, u.Path)
		}
	}
	return p, err
}
