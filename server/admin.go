package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/sitetools/sitetools/internal/insights"
	"github.com/sitetools/sitetools/tools"
	"github.com/sitetools/sitetools/tools/appointments"
)

// usageReport handles GET /admin/usage?days=N: paid usage per day, channel and tool,
// and today's budgets.
func (a *App) usageReport(c echo.Context) error {
	if a.usage == nil {
		return tools.Errorf(tools.CodeNotFound, "no usage report is configured")
	}
	days, err := daysParam(c)
	if err != nil {
		return err
	}
	report, err := a.usage(c.Request().Context(), days)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, report)
}

// insightsReport handles GET /admin/report?days=N (default 7): ratings of answers,
// searches that found nothing relevant, answers that fell back, hand-overs, the most and
// the never cited pages. This replica's counts of the last second are written first;
// other replicas' reach the database within a second.
func (a *App) insightsReport(c echo.Context) error {
	days, err := daysParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := a.insights.Flush(ctx); err != nil {
		a.logger.Warn("could not write the insight counts", "err", err.Error())
	}
	report, err := insights.Read(ctx, a.db.Pool, days)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, report)
}

// daysParam is the query parameter days: 1 to 366, default 7.
func daysParam(c echo.Context) (int, error) {
	v := c.QueryParam("days")
	if v == "" {
		return 7, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 366 {
		return 0, tools.Errorf(tools.CodeMalformedRequest, "days must be a whole number from 1 to 366")
	}
	return n, nil
}

// listBookings handles GET /admin/bookings?from=&to=&cancelled=true: bookings that
// overlap the range (default: from now, 31 days).
func (a *App) listBookings(c echo.Context) error {
	if a.bookings == nil {
		return tools.Errorf(tools.CodeNotFound, "appointments are not configured (AVAILABILITY_CONFIG)")
	}
	from, to := time.Now(), time.Now().AddDate(0, 0, 31)
	for _, p := range []struct {
		name string
		t    *time.Time
	}{{"from", &from}, {"to", &to}} {
		if v := c.QueryParam(p.name); v != "" {
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return tools.Errorf(tools.CodeMalformedRequest, "%s must be an RFC 3339 date-time", p.name)
			}
			*p.t = t
		}
	}
	list, err := a.bookings.List(c.Request().Context(), from, to, c.QueryParam("cancelled") == "true")
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"bookings": list})
}

// createBooking handles POST /admin/bookings. With an Idempotency-Key a retry returns
// the booking stored the first time (200) instead of storing it twice.
func (a *App) createBooking(c echo.Context) error {
	if a.bookings == nil {
		return tools.Errorf(tools.CodeNotFound, "appointments are not configured (AVAILABILITY_CONFIG)")
	}
	if !isJSON(c.Request().Header.Get("Content-Type")) {
		return tools.Errorf(CodeUnsupportedMediaType, "send the booking as application/json")
	}
	body, err := readBody(c.Request(), a.cfg.BodyLimitBytes)
	if err != nil {
		return err
	}
	var nb appointments.NewBooking
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&nb); err != nil {
		return tools.Errorf(tools.CodeMalformedRequest, `send {"start": RFC 3339, "end": RFC 3339, "title", "attendee", "notes"} with no other fields`)
	}
	created, err := a.bookings.Add(c.Request().Context(), nb, c.Request().Header.Get("Idempotency-Key"))
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if created.Replayed {
		status = http.StatusOK
	}
	return c.JSON(status, created)
}

// cancelBooking handles DELETE /admin/bookings/:id.
func (a *App) cancelBooking(c echo.Context) error {
	if a.bookings == nil {
		return tools.Errorf(tools.CodeNotFound, "appointments are not configured (AVAILABILITY_CONFIG)")
	}
	b, err := a.bookings.Cancel(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, b)
}
