package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/tools"
)

// healthz handles GET /healthz: the process is alive.
func (a *App) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyz handles GET /readyz: the database is reachable and its schema current.
func (a *App) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	if err := a.db.Ready(ctx); err != nil {
		e := tools.AsError(err)
		if e.Code != tools.CodeUnavailable {
			e = tools.Unavailable("the database", err)
			var outdated *postgres.SchemaOutdatedError
			if errors.As(err, &outdated) {
				e.Message = "not ready: " + outdated.Error()
			}
		}
		return writeError(c, a.logger, e)
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}
