package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// publicRoutes is every public route of the service.
func (a *App) publicRoutes() *echo.Echo {
	e := a.newEcho()
	e.IPExtractor = ipExtractor(a.cfg.TrustedProxies)
	e.Use(a.recoverer, a.observe, a.checkHost())

	e.GET("/healthz", a.healthz)
	e.GET("/readyz", a.readyz)

	api := e.Group("/api", a.cors(), a.checkOrigin)
	// Methods a route does not serve get 405 with the one error shape and Allow (a
	// browser's preflight OPTIONS is answered by the CORS middleware first).
	api.Any("/chat/tools", methodNotAllowed("GET, HEAD, POST"))
	api.GET("/chat/tools", a.listTools)
	api.HEAD("/chat/tools", a.listTools)
	api.POST("/chat/tools", a.callTool)
	api.Any("/chat", methodNotAllowed("POST"))
	api.POST("/chat", a.chatTurn)
	api.Any("/chat/challenge", methodNotAllowed("GET"))
	api.GET("/chat/challenge", a.chatChallenge)
	api.Any("/feedback", methodNotAllowed("POST"))
	api.POST("/feedback", a.feedback)
	api.Any("/handover", methodNotAllowed("POST"))
	api.POST("/handover", a.handover)

	// Remote MCP (Streamable HTTP, stateless). The SDK answers GET and DELETE with 405.
	e.Any("/mcp", methodNotAllowed("POST"), a.cors(), a.checkOrigin)
	e.Match([]string{http.MethodGet, http.MethodPost, http.MethodDelete}, "/mcp", a.serveMCP, a.cors(), a.checkOrigin)

	// Discovery: the AI catalog and the MCP server card, public metadata that a browser
	// on any origin may read (discovery.go).
	discovery := []string{http.MethodGet, http.MethodHead, http.MethodOptions}
	e.Match(discovery, catalogPath, a.aiCatalogDoc, openCORS)
	e.Match(discovery, cardPath, a.serverCardDoc, openCORS)
	e.Match(discovery, wellKnownCardPath, a.serverCardDoc, openCORS)

	// The browser side: the flyout's assets, the WebMCP bridge and the relay's widget,
	// and the pages of SITE_PAGES_DIR, one route each, with a 404 page for the rest.
	// No cookies anywhere; the pages carry the CSP.
	getHead := []string{http.MethodGet, http.MethodHead}
	// For agents, from the index whichever frontend renders the pages: llms.txt per
	// language section (llmstxt.go); each page as Markdown at <path>.md or with Accept:
	// text/markdown is answered by the pages' routes and the 404 handler (markdown.go).
	e.Match(getHead, "/llms.txt", a.llmsTxt)
	e.Match(getHead, "/:lang/llms.txt", a.llmsTxt)
	e.Match(getHead, "/assets/:file", a.asset)
	e.Match(getHead, "/webmcp/:file", a.asset)
	for _, p := range a.site.PagePaths() {
		e.Match(getHead, p, a.page)
	}
	e.RouteNotFound("/*", a.notFound)
	return e
}

// adminRoutes is every route of the admin listener. Each names the one scope it needs:
// a bearer token of another scope gets 403, no or an unknown token 401, and ADMIN_TOKEN
// opens every scope (adminauth.go).
func (a *App) adminRoutes() *echo.Echo {
	e := a.newEcho()
	e.IPExtractor = ipExtractor(nil)
	e.Use(a.recoverer, a.observe, authenticate(newAdminTokens(a.cfg)))
	for _, r := range []struct {
		method, path string
		scope        adminScope
		handler      echo.HandlerFunc
	}{
		{http.MethodGet, "/metrics", scopeReport, a.metricsHandler()},
		{http.MethodGet, "/admin/usage", scopeReport, a.usageReport},
		{http.MethodGet, "/admin/report", scopeReport, a.insightsReport},
		{http.MethodGet, "/admin/bookings", scopeBookings, a.listBookings},
		{http.MethodPost, "/admin/bookings", scopeBookings, a.createBooking},
		{http.MethodDelete, "/admin/bookings/:id", scopeBookings, a.cancelBooking},
		{http.MethodPost, "/admin/reindex", scopeHook, a.submitReindex},
		{http.MethodGet, "/admin/reindex/:id", scopeHook, a.getReindex},
	} {
		e.Add(r.method, r.path, r.handler, requireScope(r.scope))
	}
	return e
}

func (a *App) newEcho() *echo.Echo {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.Logger.SetOutput(discard{})
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		_ = writeError(c, a.logger, err)
	}
	return e
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
