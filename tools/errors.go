package tools

import (
	"errors"
	"fmt"
	"time"
)

// Error codes of calls, on every channel. Each maps to exactly one HTTP status at the
// edge (server/errors.go, which adds the codes only HTTP has); an error without a code
// is "internal" and its message is never shown.
const (
	CodeMalformedRequest       = "malformed_request"
	CodeInvalidArguments       = "invalid_arguments"
	CodeQueryTooLong           = "query_too_long"
	CodeNotFound               = "not_found"
	CodeUnknownTool            = "unknown_tool"
	CodeIdempotencyKeyRequired = "idempotency_key_required"
	CodeIdempotencyConflict    = "idempotency_conflict"
	CodeRateLimited            = "rate_limited"
	CodeUnavailable            = "unavailable"
	CodeInternal               = "internal"
)

// Detail is one reason a request was refused, located by a JSON pointer into the
// arguments ("" is the arguments object itself).
type Detail struct {
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

// Error is an error the caller may see: a code, a message written for the caller,
// and optional details. Err is the underlying cause, for logs only.
type Error struct {
	Code    string
	Message string
	Details []Detail
	// RetryAfter, when positive, tells the caller when trying again can succeed.
	RetryAfter time.Duration
	Err        error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Public is what a caller may see of e: an internal error says only "internal error"
// (its cause is for the logs); any other error is shown as it is.
func (e *Error) Public() *Error {
	if e.Code == CodeInternal {
		return &Error{Code: CodeInternal, Message: "internal error"}
	}
	return e
}

// Internal is an internal error with its cause, which only the logs show.
func Internal(cause error) *Error {
	return &Error{Code: CodeInternal, Message: "internal error", Err: cause}
}

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Unavailable reports that a dependency is down; retrying later can succeed.
func Unavailable(what string, cause error) *Error {
	return &Error{
		Code:       CodeUnavailable,
		Message:    what + " is temporarily unavailable; try again shortly",
		RetryAfter: 5 * time.Second,
		Err:        cause,
	}
}

// AsError returns the *Error in err's chain, or an internal error wrapping err.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) && e.Code != "" {
		return e
	}
	return Internal(err)
}

// ErrorCode returns the code of err, "internal" if it has none, "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	return AsError(err).Code
}
