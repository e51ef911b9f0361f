// Package pgerr tells what a PostgreSQL error means for a caller: the database is
// unreachable (a tools.Unavailable error, retry later), or something else. It depends on
// nothing of sitetools but the tool errors, so that every package that talks to
// PostgreSQL can use it.
package pgerr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sitetools/sitetools/tools"
)

// Wrap turns an error that means "the database cannot be reached" into a
// tools.Unavailable error, and wraps anything else with op.
func Wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	if IsUnavailable(err) {
		return tools.Unavailable("the database", fmt.Errorf("%s: %w", op, err))
	}
	return fmt.Errorf("%s: %w", op, err)
}

// IsUnavailable reports whether err means the database is down or unreachable, as
// opposed to a bad query.
func IsUnavailable(err error) bool {
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:2] {
		case "08", "57", "53": // connection exception, operator intervention, insufficient resources
			return true
		}
		return false
	}
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}
