package server

import (
	"cmp"
	"context"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/sitetools/sitetools/server/web"
	"github.com/sitetools/sitetools/tools"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// mimeMarkdown is the type of a page's Markdown rendering (RFC 7763).
const mimeMarkdown = "text/markdown; charset=utf-8"

// markdownRoute is the route the log and metrics name a Markdown rendering by.
const markdownRoute = "/*.md"

// errNotIndexed: no page of the index has that path.
var errNotIndexed = tools.Errorf(tools.CodeNotFound, "no page of this site is indexed at this path: /llms.txt lists its pages")

// agentMarkdown answers, for notFound, what agents ask of any path of the site that no
// route serves: GET or HEAD of <path>.md, and of <path> with Accept: text/markdown, is
// the Markdown rendering of the indexed page at path, whichever frontend renders its HTML.
// handled is false for any other request, which gets a Vary: Accept when it is a page's.
func (a *App) agentMarkdown(c echo.Context) (handled bool, err error) {
	req := c.Request()
	if req.Method != http.MethodGet && req.Method != http.MethodHead || web.IsReserved(req.URL.Path) {
		return false, nil
	}
	if path, ok := markdownSource(req.URL.Path); ok {
		return true, a.markdownOf(c, path)
	}
	c.Response().Header().Add(echo.HeaderVary, echo.HeaderAccept)
	if acceptsMarkdown(req.Header.Get(echo.HeaderAccept)) {
		return true, a.markdownOf(c, req.URL.Path)
	}
	return false, nil
}

// negotiateMarkdown answers, for page, a request for a page of SITE_PAGES_DIR with
// Accept: text/markdown with the page's Markdown rendering, when the index has the page;
// handled is false when the page is to be HTML (it is indexed under another path, or
// not yet).
func (a *App) negotiateMarkdown(c echo.Context, path string) (handled bool, err error) {
	c.Response().Header().Add(echo.HeaderVary, echo.HeaderAccept)
	if !acceptsMarkdown(c.Request().Header.Get(echo.HeaderAccept)) {
		return false, nil
	}
	p, err := a.indexedPage(c.Request().Context(), path)
	if err != nil || p == nil {
		return err != nil, err
	}
	return true, a.writeMarkdown(c, p)
}

// markdownOf writes the Markdown rendering of the indexed page at path, or 404.
func (a *App) markdownOf(c echo.Context, path string) error {
	c.SetPath(markdownRoute)
	p, err := a.indexedPage(c.Request().Context(), path)
	if err != nil {
		return err
	}
	if p == nil {
		return errNotIndexed
	}
	return a.writeMarkdown(c, p)
}

// indexedPage finds the indexed page at path as get_page does, or at path with its final
// slash added or removed ("/blog" for "/blog/"); nil when there is none.
func (a *App) indexedPage(ctx context.Context, path string) (*sitesearch.StoredPage, error) {
	other := path + "/"
	if strings.HasSuffix(path, "/") {
		other = strings.TrimSuffix(path, "/")
	}
	for _, p := range []string{path, other} {
		if p == "" {
			continue
		}
		if page, err := sitesearch.FindPage(ctx, a.pages, p); page != nil || err != nil {
			return page, err
		}
	}
	return nil, nil
}

// writeMarkdown writes p's Markdown rendering: revalidated on every use (ETag), with the
// page itself as its canonical URL, so that search engines index the HTML.
func (a *App) writeMarkdown(c echo.Context, p *sitesearch.StoredPage) error {
	body := pageMarkdown(p)
	etag := tools.ETag(body)
	h := c.Response().Header()
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", etag)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Add("Link", "<"+linkDest.Replace(p.URL)+`>; rel="canonical"`)
	if etagMatches(c.Request().Header.Get("If-None-Match"), etag) {
		return c.NoContent(http.StatusNotModified)
	}
	h.Set(echo.HeaderContentLength, strconv.Itoa(len(body)))
	if c.Request().Method == http.MethodHead {
		h.Set(echo.HeaderContentType, mimeMarkdown)
		return c.NoContent(http.StatusOK)
	}
	return c.Blob(http.StatusOK, mimeMarkdown, body)
}

// pageMarkdown is a page's Markdown rendering: its title as the H1 (in place of the H1
// its text begins with, if any), its URL, and its indexed text, whose headings are its
// sections' (get_page's text, whole).
func pageMarkdown(p *sitesearch.StoredPage) []byte {
	heading, rest, _ := firstHeading(p.Body)
	title := cmp.Or(oneLine(p.Title), heading, p.URL)
	return fmt.Appendf(nil, "# %s\n\n%s: <%s>\n\n%s\n", title, wordsFor(p.Lang).source, p.URL, strings.TrimSpace(rest))
}

// markdownSource is the path of the page whose Markdown rendering urlPath names:
// "/pricing.md" → "/pricing", "/blog/index.html.md" (llmstxt.org's name for a folder's
// page) → "/blog/". ok is false when urlPath does not end in ".md".
func markdownSource(urlPath string) (path string, ok bool) {
	path, ok = strings.CutSuffix(urlPath, ".md")
	if !ok {
		return "", false
	}
	for _, index := range []string{"/index.html", "/index"} {
		if dir, found := strings.CutSuffix(path, index); found {
			return dir + "/", true
		}
	}
	return path, true
}

// acceptsMarkdown reports whether an Accept header asks for Markdown: it names
// text/markdown with a quality above 0. (The proxy recipes send every request that names
// it here.)
func acceptsMarkdown(accept string) bool {
	if !strings.Contains(strings.ToLower(accept), "text/markdown") {
		return false
	}
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || mt != "text/markdown" {
			continue
		}
		if q, err := strconv.ParseFloat(cmp.Or(params["q"], "1"), 64); err == nil && q > 0 {
			return true
		}
	}
	return false
}
