package server

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/sitetools/sitetools/internal/config"

	"github.com/labstack/echo/v4"

	"github.com/sitetools/sitetools/tools"
)

// webFiles are the demo pages' files: their layout, stylesheet and router. The chat
// widget and the WebMCP bridge are bundled from web/widget (widget.go); the relay's
// widget comes from npm, read from WEBMCP_WIDGET_PATH at start-up.
//
//go:embed web/templates web/assets
var webFiles embed.FS

// site is what the public listener serves to browsers: the pages rendered from
// SITE_PAGES_DIR (none when unset), their 404 pages, and the static files.
type site struct {
	originTrial string                   // the Origin-Trial header of every page, if any
	pages       map[string]*renderedPage // by URL path
	notFound    map[string]*renderedPage // by section: "/" and the language roots
	sections    []string
	rootLang    string
	static      map[string]*staticFile // by URL path
	csp         string
}

type renderedPage struct {
	body []byte
	etag string
}

type staticFile struct {
	body        []byte
	etag        string
	contentType string
	immutable   bool // its name carries its content's hash
}

// sourcePage is one Markdown page of SITE_PAGES_DIR.
type sourcePage struct {
	path    string // URL path, as sitesearch maps files: "/", "/blog/", "/services/web-platforms"
	title   string
	heading string // the first level-1 heading
	lang    string
	body    template.HTML
}

// Paths of the service, each with everything below it: a page can never shadow them.
var reservedPrefixes = []string{"/api", "/assets", "/webmcp", "/mcp", "/healthz", "/readyz"}

// Pages under these names go to the footer rather than the main navigation.
var legalNames = []string{"imprint", "impressum", "privacy", "datenschutz", "legal", "terms"}

// newSite loads the pages and static files. A broken page stops start-up: a site that
// silently lost a page would be worse.
func newSite(cfg config.Config, logger *slog.Logger) (*site, error) {
	s := &site{
		pages:       map[string]*renderedPage{},
		notFound:    map[string]*renderedPage{},
		rootLang:    "en",
		static:      map[string]*staticFile{},
		csp:         contentSecurityPolicy(cfg.WebMCPRelayPort),
		originTrial: cfg.WebMCPOriginTrialToken,
	}
	if err := s.loadStatic(cfg, logger); err != nil {
		return nil, err
	}
	if cfg.SitePagesDir == "" {
		return s, nil
	}
	pages, err := readPages(cfg.SitePagesDir)
	if err != nil {
		return nil, err
	}
	if err := s.render(pages); err != nil {
		return nil, err
	}
	return s, nil
}

// contentSecurityPolicy allows what the pages and the bridge need and nothing else:
// scripts, styles, images and fetches from the site itself, and the WebSocket of the
// visitor's local relay. No inline script or style, no frames, no foreign form targets.
func contentSecurityPolicy(relayPort int) string {
	return strings.Join([]string{
		"default-src 'none'",
		"script-src 'self'",
		"style-src 'self'",
		"img-src 'self'",
		"connect-src 'self' ws://localhost:" + strconv.Itoa(relayPort),
		"form-action 'self'",
		"base-uri 'none'",
		"frame-ancestors 'none'",
	}, "; ")
}

func (s *site) loadStatic(cfg config.Config, logger *slog.Logger) error {
	err := fs.WalkDir(webFiles, "web/assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := webFiles.ReadFile(p)
		if err != nil {
			return err
		}
		s.addStatic("/assets"+strings.TrimPrefix(p, "web/assets"), b)
		return nil
	})
	if err != nil {
		return fmt.Errorf("server: web assets: %w", err)
	}
	bundle, err := widgetBundle()
	if err != nil {
		return err
	}
	for _, f := range bundle {
		s.addStatic("/webmcp/"+f.name, f.body)
		s.static["/webmcp/"+f.name].immutable = f.immutable
	}
	widget := cfg.WebMCPWidgetPath
	if widget == "" {
		widget = config.DefaultWebMCPWidgetPath
	}
	b, err := os.ReadFile(widget)
	switch {
	case err == nil:
		s.addStatic("/webmcp/widget.js", b)
	case cfg.WebMCPWidgetPath == "" && errors.Is(err, fs.ErrNotExist):
		// Without the widget the site works; only the relay connection is unavailable.
		logger.Warn("WebMCP widget not found: visitors cannot connect an MCP client through the relay (run deploy/dev/browser.sh npm, or set WEBMCP_WIDGET_PATH)", "path", widget)
	default:
		return fmt.Errorf("server: WEBMCP_WIDGET_PATH: %w", err)
	}
	return nil
}

// staticTypes fixes the content types of the browser files: the host's mime.types
// must not decide them (the CSP and nosniff depend on them).
var staticTypes = map[string]string{
	".js":   "text/javascript; charset=utf-8",
	".mjs":  "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".json": "application/json",
	".png":  "image/png",
	".ico":  "image/x-icon",
}

func (s *site) addStatic(urlPath string, b []byte) {
	ct, ok := staticTypes[path.Ext(urlPath)]
	if !ok {
		ct = mime.TypeByExtension(path.Ext(urlPath))
	}
	if ct == "" {
		ct = "application/octet-stream"
	}
	s.static[urlPath] = &staticFile{body: b, etag: etagOf(b), contentType: ct}
}

func etagOf(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}

// page handles GET and HEAD of every page of SITE_PAGES_DIR (routes.go registers
// one route per page).
func (a *App) page(c echo.Context) error {
	p, ok := a.site.pages[c.Path()]
	if !ok {
		return a.notFound(c)
	}
	return a.writePage(c, http.StatusOK, p)
}

// notFound handles every path no route serves: the site's 404 page for a browser
// asking for a page, the one error shape for anything else.
func (a *App) notFound(c echo.Context) error {
	req := c.Request()
	p := req.URL.Path
	htmlMethod := req.Method == http.MethodGet || req.Method == http.MethodHead
	if len(a.site.pages) == 0 || !htmlMethod || isReserved(p) {
		return tools.Errorf(tools.CodeNotFound, "no such route")
	}
	// "/blog" and "/contact/" lead to the page they mean.
	for _, alt := range []string{p + "/", strings.TrimSuffix(p, "/")} {
		if _, ok := a.site.pages[alt]; ok && alt != p && alt != "" {
			return c.Redirect(http.StatusMovedPermanently, alt)
		}
	}
	return a.writePage(c, http.StatusNotFound, a.site.notFound[sectionOf(p, a.site.sections)])
}

func (a *App) writePage(c echo.Context, status int, p *renderedPage) error {
	h := c.Response().Header()
	h.Set("Content-Security-Policy", a.site.csp)
	if a.site.originTrial != "" {
		h.Set("Origin-Trial", a.site.originTrial)
	}
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", p.etag)
	if status == http.StatusOK && etagMatches(c.Request().Header.Get("If-None-Match"), p.etag) {
		return c.NoContent(http.StatusNotModified)
	}
	if c.Request().Method == http.MethodHead {
		h.Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
		h.Set(echo.HeaderContentLength, strconv.Itoa(len(p.body)))
		return c.NoContent(status)
	}
	return c.Blob(status, echo.MIMETextHTMLCharsetUTF8, p.body)
}

// asset handles GET and HEAD of /assets/* and /webmcp/*: the demo pages' files, the
// chat widget, the bridge and the relay's widget. Files under stable names (chat.js)
// revalidate on every use (an ETag makes that a 304), so a new version reaches
// browsers at once; the files they load have their content's hash in their names and
// are cached for a year.
func (a *App) asset(c echo.Context) error {
	f, ok := a.site.static[c.Request().URL.Path]
	if !ok {
		return tools.Errorf(tools.CodeNotFound, "no such file")
	}
	h := c.Response().Header()
	h.Set("X-Content-Type-Options", "nosniff")
	if f.immutable {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}

	h.Set("ETag", f.etag)
	if etagMatches(c.Request().Header.Get("If-None-Match"), f.etag) {
		return c.NoContent(http.StatusNotModified)
	}
	if c.Request().Method == http.MethodHead {
		h.Set(echo.HeaderContentType, f.contentType)
		h.Set(echo.HeaderContentLength, strconv.Itoa(len(f.body)))
		return c.NoContent(http.StatusOK)
	}
	return c.Blob(http.StatusOK, f.contentType, f.body)
}
