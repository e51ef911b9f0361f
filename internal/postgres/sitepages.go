package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sitetools/sitetools/tools/sitesearch"
)

// SitePages reads the indexed pages without searching them: one page by URL or path
// (get_page, a page's Markdown rendering) and the directory of the site that llms.txt
// lists. It needs no embedding model.
type SitePages struct {
	db *DB
}

// NewSitePages returns the pages of the index in db.
func NewSitePages(db *DB) *SitePages { return &SitePages{db: db} }

// Page finds a page by absolute URL or by path; nil when there is none.
func (s *SitePages) Page(ctx context.Context, urlOrPath string) (*sitesearch.StoredPage, error) {
	var p sitesearch.StoredPage
	err := s.db.Pool.QueryRow(ctx, `SELECT url, path, title, lang, body FROM pages
		WHERE url = $1 OR path = $1 ORDER BY url = $1 DESC, url LIMIT 1`, urlOrPath).Scan(&p.URL, &p.Path, &p.Title, &p.Lang, &p.Body)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, Wrap("postgres.SitePages.Page", err)
	}
	return &p, nil
}

// Version changes whenever a page is added, changed or removed: every write of a page
// sets its updated_at, and a removal changes the count. Renderings of the whole index
// are cached under it.
func (s *SitePages) Version(ctx context.Context) (string, error) {
	var n int64
	var last time.Time
	err := s.db.Pool.QueryRow(ctx, `SELECT count(*), coalesce(max(updated_at), 'epoch') FROM pages`).Scan(&n, &last)
	if err != nil {
		return "", Wrap("postgres.SitePages.Version", err)
	}
	return fmt.Sprintf("%d@%d", n, last.UnixMicro()), nil
}

// Sections returns the languages whose pages are under a folder of their own name
// ("/de/…" for de), sorted.
func (s *SitePages) Sections(ctx context.Context) ([]string, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT DISTINCT lang FROM pages
		WHERE lang ~ '^[a-z]{2,3}$' AND (path = '/' || lang OR path LIKE '/' || lang || '/%') ORDER BY lang`)
	if err != nil {
		return nil, Wrap("postgres.SitePages.Sections", err)
	}
	langs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return langs, Wrap("postgres.SitePages.Sections", err)
}

// directorySQL lists the pages under $1 (a folder, "/" for all, and the folder's own page
// without its slash), leaving out those under the folders $2 (each "/de/"), most
// prominent first: the fewest path segments, then the shortest path. Only the listed
// pages' text is read, and of it only its start. The count of all such pages is on
// every row.
const directorySQL = `
WITH under AS (
	SELECT id, path,
	       CASE WHEN btrim(path, '/') = '' THEN 0
	            ELSE length(btrim(path, '/')) - length(replace(btrim(path, '/'), '/', '')) + 1 END AS depth
	FROM pages
	WHERE (path LIKE $1 || '%' OR path = rtrim($1, '/'))
	  AND NOT path LIKE ANY (SELECT f || '%' FROM unnest($2::text[]) f)
	  AND NOT path = ANY (SELECT rtrim(f, '/') FROM unnest($2::text[]) f)
),
listed AS (
	SELECT id, path, depth FROM under ORDER BY depth, length(path), path COLLATE "C" LIMIT $3
)
SELECT p.url, p.path, p.title, p.lang, left(p.body, $4), (SELECT count(*) FROM under)
FROM listed l JOIN pages p ON p.id = l.id
ORDER BY l.depth, length(l.path), l.path COLLATE "C"`

// leadChars is how much of a listed page's text Directory reads: enough for its first
// sentence.
const leadChars = 1000

// Directory returns at most limit pages under the folder under ("/" for the whole site),
// without those under the folders except ("/de/"), most prominent first (the fewest path
// segments, then the shortest path), each with the start of its text as Body; and how
// many pages there are in all.
func (s *SitePages) Directory(ctx context.Context, under string, except []string, limit int) ([]sitesearch.StoredPage, int, error) {
	rows, err := s.db.Pool.Query(ctx, directorySQL, under, nonNil(except), limit, leadChars)
	if err != nil {
		return nil, 0, Wrap("postgres.SitePages.Directory", err)
	}
	var total int
	pages, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (sitesearch.StoredPage, error) {
		var p sitesearch.StoredPage
		err := r.Scan(&p.URL, &p.Path, &p.Title, &p.Lang, &p.Body, &total)
		return p, err
	})
	if err != nil {
		return nil, 0, Wrap("postgres.SitePages.Directory", err)
	}
	return pages, total, nil
}
