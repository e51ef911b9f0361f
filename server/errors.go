package server

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/sitetools/sitetools/tools"
)

// The error codes only HTTP has; the codes of calls are in package tools.
const (
	CodeOriginNotAllowed     = "origin_not_allowed"
	CodeConsentRequired      = "consent_required"
	CodeUnauthorized         = "unauthorized"
	CodeScopeRequired        = "scope_required" // an admin token valid, but of another scope
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeBodyTooLarge         = "body_too_large"
	CodeUnsupportedMediaType = "unsupported_media_type"
)

// A chat turn without a solved challenge while CHAT_PROOF_OF_WORK asks for one, and one
// whose solution is forged, expired or was used before (pow.go).
const (
	CodeProofOfWorkRequired = "proof_of_work_required"
	CodeProofOfWorkInvalid  = "proof_of_work_invalid"
)

// codes maps every error code to its HTTP status. It is the only such table.
var codes = map[string]int{
	tools.CodeMalformedRequest:       http.StatusBadRequest,
	tools.CodeInvalidArguments:       http.StatusBadRequest,
	tools.CodeQueryTooLong:           http.StatusBadRequest,
	tools.CodeIdempotencyKeyRequired: http.StatusBadRequest,
	CodeUnauthorized:                 http.StatusUnauthorized,
	CodeOriginNotAllowed:             http.StatusForbidden,
	CodeConsentRequired:              http.StatusForbidden,
	CodeProofOfWorkRequired:          http.StatusForbidden,
	CodeProofOfWorkInvalid:           http.StatusForbidden,
	CodeScopeRequired:                http.StatusForbidden,
	tools.CodeNotFound:               http.StatusNotFound,
	tools.CodeUnknownTool:            http.StatusNotFound,
	CodeUnknownAnswer:                http.StatusNotFound,
	CodeMethodNotAllowed:             http.StatusMethodNotAllowed,
	tools.CodeIdempotencyConflict:    http.StatusConflict,
	CodeBodyTooLarge:                 http.StatusRequestEntityTooLarge,
	CodeUnsupportedMediaType:         http.StatusUnsupportedMediaType,
	tools.CodeRateLimited:            http.StatusTooManyRequests,
	tools.CodeInternal:               http.StatusInternalServerError,
	tools.CodeUnavailable:            http.StatusServiceUnavailable,
}

// Status returns the HTTP status for an error code; unknown codes are internal.
func Status(code string) int {
	if s, ok := codes[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// errorBody is the one shape of every error response.
type errorBody struct {
	Error errorPayload `json:"error"`
}

type errorPayload struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details []tools.Detail `json:"details,omitempty"`
}

// codeClientClosed is what the log and metrics record for a request whose client went
// away before its answer (an agent cancelling a call, a closed tab): status 499, as
// nginx has it. No client ever reads it, and it is no failure of the service.
const (
	codeClientClosed   = "client_closed"
	statusClientClosed = 499
)

// writeError sends err in the one error shape. Errors without a code are logged and
// shown as "internal" with a message that says nothing about internals.
func writeError(c echo.Context, logger *slog.Logger, err error) error {
	if errors.Is(c.Request().Context().Err(), context.Canceled) {
		c.Set(ctxErrorCode, codeClientClosed)
		c.Response().WriteHeader(statusClientClosed)
		return nil
	}
	e := toolsError(err)
	status := Status(e.Code)
	if status >= 500 {
		// The cause may name hosts or queries of ours but never request content.
		logger.Error("request failed", "route", c.Path(), "code", e.Code, "err", errString(e))
	}
	e = e.Public()
	if e.RetryAfter > 0 {
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	c.Set(ctxErrorCode, e.Code)
	return c.JSON(status, errorBody{errorPayload{Code: e.Code, Message: e.Message, Details: e.Details}})
}

func errString(e *tools.Error) string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return e.Message
}

// toolsError converts echo's own errors (unknown route, wrong method) and everything
// else into a *tools.Error.
func toolsError(err error) *tools.Error {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		switch he.Code {
		case http.StatusNotFound:
			return tools.Errorf(tools.CodeNotFound, "no such route")
		case http.StatusMethodNotAllowed:
			return tools.Errorf(CodeMethodNotAllowed, "method not allowed on this route")
		case http.StatusRequestEntityTooLarge:
			return tools.Errorf(CodeBodyTooLarge, "request body too large")
		case http.StatusUnsupportedMediaType:
			return tools.Errorf(CodeUnsupportedMediaType, "unsupported media type")
		case http.StatusUnauthorized:
			return tools.Errorf(CodeUnauthorized, "missing or wrong bearer token")
		}
		return tools.Internal(err)
	}
	return tools.AsError(err)
}
