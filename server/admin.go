package server

import (
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/sitetools/sitetools/tools"
)

// usageReport handles GET /admin/usage?days=N: paid usage per day, channel and tool,
// and today's budgets.
func (a *App) usageReport(c echo.Context) error {
	if a.usage == nil {
		return tools.Errorf(tools.CodeNotFound, "no usage report is configured")
	}
	days := 7
	if v := c.QueryParam("days"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 366 {
			return tools.Errorf(tools.CodeMalformedRequest, "days must be a whole number from 1 to 366")
		}
		days = n
	}
	report, err := a.usage(c.Request().Context(), days)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, report)
}
