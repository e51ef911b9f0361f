package server

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/sitetools/sitetools/server/web"
	"github.com/sitetools/sitetools/tools"
)

// page handles GET and HEAD of every page of SITE_PAGES_DIR (routes.go registers
// one route per page).
func (a *App) page(c echo.Context) error {
	p, ok := a.site.Page(c.Path())
	if !ok {
		return a.notFound(c)
	}
	if handled, err := a.negotiateMarkdown(c, c.Path()); handled {
		return err
	}
	return a.writePage(c, http.StatusOK, p)
}

// notFound handles every path no route serves: a page's Markdown rendering for an agent
// asking for one (markdown.go), a PDF of SITE_PAGES_DIR, the site's 404 page for a
// browser asking for a page, the one error shape for anything else.
func (a *App) notFound(c echo.Context) error {
	req := c.Request()
	p := req.URL.Path
	htmlMethod := req.Method == http.MethodGet || req.Method == http.MethodHead
	if handled, err := a.agentMarkdown(c); handled {
		return err
	}
	if f, ok := a.site.Document(p); ok && htmlMethod && !web.IsReserved(p) {
		return a.sendFile(c, f)
	}
	if !a.site.HasPages() || !htmlMethod || web.IsReserved(p) {
		if p == "/" {
			// An agent that tries the root of a sitetools without pages learns where the
			// catalog is.
			c.Response().Header().Set("Link", discoveryLink)
		}
		return tools.Errorf(tools.CodeNotFound, "no such route")
	}
	// "/blog" and "/contact/" lead to the page they mean.
	for _, alt := range []string{p + "/", strings.TrimSuffix(p, "/")} {
		if _, ok := a.site.Page(alt); ok && alt != p && alt != "" {
			return c.Redirect(http.StatusMovedPermanently, alt)
		}
	}
	return a.writePage(c, http.StatusNotFound, a.site.NotFoundPage(p))
}

func (a *App) writePage(c echo.Context, status int, p *web.Page) error {
	h := c.Response().Header()
	h.Set("Content-Security-Policy", a.site.CSP())
	if t := a.site.OriginTrial(); t != "" {
		h.Set("Origin-Trial", t)
	}
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-cache")
	h.Set("Link", discoveryLink)
	h.Set("ETag", p.ETag)
	if status == http.StatusOK && etagMatches(c.Request().Header.Get("If-None-Match"), p.ETag) {
		return c.NoContent(http.StatusNotModified)
	}
	if c.Request().Method == http.MethodHead {
		h.Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
		h.Set(echo.HeaderContentLength, strconv.Itoa(len(p.Body)))
		return c.NoContent(status)
	}
	return c.Blob(status, echo.MIMETextHTMLCharsetUTF8, p.Body)
}

// asset handles GET and HEAD of /assets/* and /webmcp/*: the demo pages' files, the
// chat widget, the bridge and the relay's widget. Files under stable names (chat.js)
// revalidate on every use (an ETag makes that a 304), so a new version reaches
// browsers at once; the files they load have their content's hash in their names and
// are cached for a year.
func (a *App) asset(c echo.Context) error {
	f, ok := a.site.File(c.Request().URL.Path)
	if !ok {
		return tools.Errorf(tools.CodeNotFound, "no such file")
	}
	return a.sendFile(c, f)
}

// sendFile answers GET and HEAD with f, 304 when If-None-Match names its ETag.
func (a *App) sendFile(c echo.Context, f *web.File) error {
	h := c.Response().Header()
	h.Set("X-Content-Type-Options", "nosniff")
	if f.Immutable {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}

	h.Set("ETag", f.ETag)
	if etagMatches(c.Request().Header.Get("If-None-Match"), f.ETag) {
		return c.NoContent(http.StatusNotModified)
	}
	if c.Request().Method == http.MethodHead {
		h.Set(echo.HeaderContentType, f.ContentType)
		h.Set(echo.HeaderContentLength, strconv.Itoa(len(f.Body)))
		return c.NoContent(http.StatusOK)
	}
	return c.Blob(http.StatusOK, f.ContentType, f.Body)
}
