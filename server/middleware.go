package server

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/rs/cors"

	"github.com/sitetools/sitetools/internal/logs"
	"github.com/sitetools/sitetools/tools"
)

// Keys of values handlers leave in the echo context for the request log.
const (
	ctxTool      = "sitetools.tool"
	ctxChannel   = "sitetools.channel"
	ctxErrorCode = "sitetools.code"
)

// observe logs one line per request and counts it. The line has the route template,
// never the path or query string, and no body, header or client address.
func (a *App) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		route := c.Path()
		if route == "" || route == "/*" {
			route = "unmatched"
		}
		status := c.Response().Status
		end := time.Now()
		latency := end.Sub(start)
		a.metrics.observeHTTP(route, c.Request().Method, status, latency)

		level := slog.LevelInfo
		switch {
		case status >= 500:
			level = slog.LevelError
		case status == http.StatusNotModified:
			// A revalidation (a relay polling the catalog) tells an operator nothing new.
			level = slog.LevelDebug
		}
		ctx := c.Request().Context()
		h := a.logger.Handler()
		if !h.Enabled(ctx, level) {
			return nil
		}
		var attrs [3]logs.Attr
		n := 0
		for _, k := range [...]struct{ key, attr string }{{ctxTool, "tool"}, {ctxChannel, "channel"}, {ctxErrorCode, "code"}} {
			if v, ok := c.Get(k.key).(string); ok {
				attrs[n] = logs.Attr{Key: k.attr, Value: v}
				n++
			}
		}
		method := c.Request().Method
		if j, ok := h.(*logs.JSON); ok && j.Request(ctx, end, level, "request", method, route, status, latency.Microseconds(), attrs[:n]) {
			return nil
		}
		// A record without a caller: the line's source is always this middleware.
		r := slog.NewRecord(end, level, "request", 0)
		r.AddAttrs(
			slog.String("method", method),
			slog.String("route", route),
			slog.Int("status", status),
			slog.Int64("latency_us", latency.Microseconds()),
		)
		for _, a := range attrs[:n] {
			r.AddAttrs(slog.String(a.Key, a.Value))
		}
		_ = h.Handle(ctx, r)
		return nil
	}
}

// recoverer turns a panic in a handler into a 500 with the one error shape.
func (a *App) recoverer(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				a.logger.Error("handler panicked", "route", c.Path(), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				err = tools.Internal(fmt.Errorf("panic: %v", p))
			}
		}()
		return next(c)
	}
}

// allowOrigin reports whether a browser on origin may call the public API: the site's
// own origin, the configured origins, and same-origin requests (Origin's scheme, host and
// port those of the request).
func (a *App) allowOrigin(r *http.Request, origin string) bool {
	o := strings.ToLower(origin)
	if slices.Contains(a.cfg.CORSAllowedOrigins, "*") || slices.Contains(a.cfg.AllowedOrigins(), o) {
		return true
	}
	return sameOrigin(o, a.requestScheme(r), r.Host)
}

// sameOrigin reports whether origin is scheme://host, a default port written or not.
func sameOrigin(origin, scheme, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Scheme != scheme || u.Host == "" || u.Path != "" || u.User != nil {
		return false
	}
	req, err := url.Parse(scheme + "://" + host)
	if err != nil {
		return false
	}
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		if u.Scheme == "https" {
			return "443"
		}
		return "80"
	}
	return strings.EqualFold(u.Hostname(), req.Hostname()) && port(u) == port(req)
}

// hostOnly is a Host header's host, lower-cased, without port or IPv6 brackets.
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return strings.ToLower(strings.Trim(h, "[]"))
	}
	return strings.ToLower(strings.Trim(hostport, "[]"))
}

// requestScheme is the scheme the browser used: https on a TLS connection, else what a
// trusted proxy (or the reverse proxy on the Unix socket) says in X-Forwarded-Proto,
// else http. A client's own X-Forwarded-Proto counts for nothing.
func (a *App) requestScheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	proto := strings.ToLower(strings.TrimSpace(strings.Split(r.Header.Get("X-Forwarded-Proto"), ",")[0]))
	if proto != "https" && proto != "http" {
		return "http"
	}
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		peer := ap.Addr().Unmap()
		if !slices.ContainsFunc(a.cfg.TrustedProxies, func(p netip.Prefix) bool { return p.Contains(peer) }) {
			return "http"
		}
	}
	return proto
}

// checkHost refuses DNS rebinding on every public route: a request that arrives on a
// loopback address must name a loopback host, the site's own host, or a host of
// ALLOWED_HOSTS (the Host a reverse proxy on the same machine passes on). A page that
// rebinds its own name to 127.0.0.1 then reaches nothing: not the index, not the chat's
// budget, not /mcp.
//
// echo applies a middleware to its handler anew on every request: what does not depend
// on the request is worked out here, once, not in the function it returns.
func (a *App) checkHost() echo.MiddlewareFunc {
	allowed := slices.Clone(a.cfg.AllowedHosts)
	if a.cfg.SiteURL != "" {
		if u, err := url.Parse(a.cfg.SiteURL); err == nil {
			allowed = append(allowed, strings.ToLower(u.Hostname()))
		}
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error { return hostAllowed(c, allowed, next) }
	}
}

func hostAllowed(c echo.Context, allowed []string, next echo.HandlerFunc) error {
	local, ok := c.Request().Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return next(c)
	}
	tcp, ok := local.(*net.TCPAddr)
	if !ok || !tcp.IP.IsLoopback() {
		return next(c)
	}
	host := hostOnly(c.Request().Host)
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || slices.Contains(allowed, host) {
		return next(c)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return next(c)
	}
	return tools.Errorf(CodeOriginNotAllowed, "host %q is not allowed here; if a reverse proxy on this machine passes it on, add it to ALLOWED_HOSTS", tools.Truncate(host, 64))
}

// cors answers preflights and sets CORS headers for allowed origins. No credentials:
// the API uses no cookies.
func (a *App) cors() echo.MiddlewareFunc {
	c := cors.New(cors.Options{
		AllowOriginVaryRequestFunc: func(r *http.Request, origin string) (bool, []string) {
			return a.allowOrigin(r, origin), nil
		},
		AllowedMethods: []string{http.MethodGet, http.MethodPost},
		AllowedHeaders: []string{"Content-Type", "Idempotency-Key", "If-None-Match", "Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name", "Last-Event-ID", "Altcha"},
		ExposedHeaders: []string{"ETag", "Retry-After"},
		MaxAge:         600,
	})
	withCORS := echo.WrapMiddleware(c.Handler)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(ctx echo.Context) error {
			// Without an Origin there is nothing for CORS to do but say the answer varies.
			if ctx.Request().Header.Get("Origin") == "" {
				ctx.Response().Header().Add("Vary", "Origin")
				return next(ctx)
			}
			// Wrapped here, for the requests that need it, as echo applies a middleware
			// anew on every request.
			return withCORS(next)(ctx)
		}
	}
}

// checkOrigin refuses requests from browsers on origins that are not allowed. Requests
// without an Origin header (servers, curl, MCP clients) pass.
func (a *App) checkOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		origin := c.Request().Header.Get("Origin")
		if origin != "" && !a.allowOrigin(c.Request(), origin) {
			return tools.Errorf(CodeOriginNotAllowed, "requests from this origin are not allowed")
		}
		return next(c)
	}
}

// methodNotAllowed answers a method the route does not serve.
func methodNotAllowed(allow string) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Response().Header().Set("Allow", allow)
		return tools.Errorf(CodeMethodNotAllowed, "method %s is not allowed on this route; allowed: %s", tools.Truncate(c.Request().Method, 16), allow)
	}
}

// ipExtractor finds the client address: the socket peer, or, when the peer is a trusted
// proxy, the nearest untrusted address in X-Forwarded-For.
func ipExtractor(trusted []netip.Prefix) echo.IPExtractor {
	tcp := tcpIPExtractor(trusted)
	return func(r *http.Request) string {
		if _, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
			return tcp(r)
		}
		// A Unix socket: only a process on this machine, the reverse proxy, can connect,
		// so the address it appended to X-Forwarded-For is the client's.
		// Every line of the header, in order: a proxy that adds its own line after the
		// client's must not leave the client's line to be read alone.
		xff := strings.Join(r.Header.Values("X-Forwarded-For"), ",")
		last := strings.TrimSpace(xff[strings.LastIndex(xff, ",")+1:])
		if a, err := netip.ParseAddr(last); err == nil {
			return a.String()
		}
		return "unix"
	}
}

func tcpIPExtractor(trusted []netip.Prefix) echo.IPExtractor {
	if len(trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, p := range trusted {
		_, ipnet, err := net.ParseCIDR(p.String())
		if err == nil {
			opts = append(opts, echo.TrustIPRange(ipnet))
		}
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}
