package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/sitetools/sitetools/internal/config"
	"github.com/sitetools/sitetools/tools"
)

// adminScope is a set of the admin API's scopes, one bit each. A token of one scope
// opens only that scope's routes, so that a CMS holding the publish hook's token
// cannot read visitors' bookings.
type adminScope uint8

const (
	scopeHook     adminScope = 1 << iota // the publish hook (ADMIN_HOOK_TOKEN)
	scopeReport                          // read-only reports and metrics (ADMIN_REPORT_TOKEN)
	scopeBookings                        // appointments (ADMIN_BOOKINGS_TOKEN)

	scopeAll = scopeHook | scopeReport | scopeBookings // ADMIN_TOKEN
)

// name and variable are what a refusal tells the caller: the scope a route needs and
// where a token of it comes from.
func (s adminScope) name() string {
	switch s {
	case scopeHook:
		return "hook"
	case scopeReport:
		return "report"
	case scopeBookings:
		return "bookings"
	}
	return "admin"
}

func (s adminScope) variable() string {
	switch s {
	case scopeHook:
		return "ADMIN_HOOK_TOKEN"
	case scopeReport:
		return "ADMIN_REPORT_TOKEN"
	case scopeBookings:
		return "ADMIN_BOOKINGS_TOKEN"
	}
	return "ADMIN_TOKEN"
}

// ctxAdminScopes is where authenticate leaves the scopes of the request's token.
const ctxAdminScopes = "sitetools.adminScopes"

// adminToken is a configured token, kept as its hash: comparing hashes of equal
// length tells nothing about a token's length.
type adminToken struct {
	sum    [sha256.Size]byte
	scopes adminScope
}

// newAdminTokens is every configured admin token with the scopes it grants; tokens
// not set are left out, so that an empty bearer never matches.
func newAdminTokens(cfg config.Config) []adminToken {
	var ts []adminToken
	for _, t := range []struct {
		v      string
		scopes adminScope
	}{
		{cfg.AdminToken, scopeAll},
		{cfg.AdminHookToken, scopeHook},
		{cfg.AdminReportToken, scopeReport},
		{cfg.AdminBookingsToken, scopeBookings},
	} {
		if t.v != "" {
			ts = append(ts, adminToken{sha256.Sum256([]byte(t.v)), t.scopes})
		}
	}
	return ts
}

// grantedScopes returns the scopes the presented token grants (none for an unknown
// one). It compares with every configured token, in constant time and without
// stopping at a match, so that the time taken does not tell which one matched.
func grantedScopes(tokens []adminToken, presented string) adminScope {
	sum := sha256.Sum256([]byte(presented))
	var granted adminScope
	for _, t := range tokens {
		eq := subtle.ConstantTimeCompare(sum[:], t.sum[:])
		granted |= adminScope(subtle.ConstantTimeSelect(eq, int(t.scopes), 0))
	}
	return granted
}

// authenticate guards the whole admin listener: a request without a bearer token of
// any scope gets 401, whatever its route. Which scope the route needs is requireScope's.
func authenticate(tokens []adminToken) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			got, ok := strings.CutPrefix(c.Request().Header.Get("Authorization"), "Bearer ")
			granted := grantedScopes(tokens, got)
			if !ok || got == "" || granted == 0 {
				c.Response().Header().Set("WWW-Authenticate", `Bearer realm="sitetools-admin"`)
				return tools.Errorf(CodeUnauthorized, "missing or wrong bearer token")
			}
			c.Set(ctxAdminScopes, granted)
			return next(c)
		}
	}
}

// requireScope refuses a valid token of another scope with 403, naming the scope the
// route needs and the variables whose tokens grant it.
func requireScope(need adminScope) echo.MiddlewareFunc {
	from := need.variable()
	if need != scopeAll {
		from += " or ADMIN_TOKEN"
	}
	msg := fmt.Sprintf("this route needs the %s scope: a token from %s", need.name(), from)
	// RFC 6750's answer to a token without the scope a resource needs.
	challenge := fmt.Sprintf(`Bearer realm="sitetools-admin", error="insufficient_scope", scope=%q`, need.name())
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			granted, _ := c.Get(ctxAdminScopes).(adminScope)
			if granted&need != need {
				c.Response().Header().Set("WWW-Authenticate", challenge)
				return tools.Errorf(CodeScopeRequired, "%s", msg)
			}
			return next(c)
		}
	}
}
