package postgres

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sitetools/sitetools/tools"
	"github.com/sitetools/sitetools/tools/appointments"
)

// Bookings is the bookings table; it implements appointments.BookingStore.
type Bookings struct {
	db *DB
}

// NewBookings returns the bookings store on db.
func NewBookings(db *DB) *Bookings { return &Bookings{db: db} }

// Add stores b. With an idempotency key, a repeat of the same request returns the
// booking stored the first time; the same key with another request is a conflict.
// The insert is one statement: the booking is stored whole or not at all.
func (s *Bookings) Add(ctx context.Context, b appointments.NewBooking, idempotencyKey string) (*appointments.Created, error) {
	if err := b.Validate(); err != nil {
		return nil, &tools.Error{Code: tools.CodeInvalidArguments, Message: strings.ReplaceAll(err.Error(), "\n", "; ")}
	}
	var key *string
	if idempotencyKey != "" {
		if len(idempotencyKey) > 255 {
			return nil, tools.Errorf(tools.CodeMalformedRequest, "the Idempotency-Key header must be at most 255 characters")
		}
		key = &idempotencyKey
	}
	h := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%d\x00%s\x00%s\x00%s", b.Start.UnixNano(), b.End.UnixNano(), b.Title, b.Attendee, b.Notes)))
	out := &appointments.Created{Overlaps: []string{}}
	err := s.scanBooking(s.db.Pool.QueryRow(ctx, `INSERT INTO bookings (start_at, end_at, title, attendee, notes, idempotency_key, request_hash)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (idempotency_key) DO NOTHING
		RETURNING `+bookingColumns, b.Start, b.End, b.Title, b.Attendee, b.Notes, key, h[:]), &out.Booking)
	if errors.Is(err, pgx.ErrNoRows) {
		// The key exists: the same request again, or another one.
		var stored []byte
		err = s.db.Pool.QueryRow(ctx, `SELECT request_hash FROM bookings WHERE idempotency_key = $1`, idempotencyKey).Scan(&stored)
		if err != nil {
			return nil, Wrap("appointments.Add", err)
		}
		if string(stored) != string(h[:]) {
			return nil, tools.Errorf(tools.CodeIdempotencyConflict, "this Idempotency-Key was already used for another booking; use a new key for a new booking")
		}
		err = s.scanBooking(s.db.Pool.QueryRow(ctx, `SELECT `+bookingColumns+` FROM bookings WHERE idempotency_key = $1`, idempotencyKey), &out.Booking)
		out.Replayed = true
	}
	if err != nil {
		return nil, Wrap("appointments.Add", err)
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT id::text FROM bookings WHERE cancelled_at IS NULL AND id <> $1
		AND start_at < $3 AND end_at > $2 ORDER BY start_at`, out.Booking.ID, out.Booking.Start, out.Booking.End)
	if err != nil {
		return nil, Wrap("appointments.Add", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, Wrap("appointments.Add", err)
	}
	if ids != nil {
		out.Overlaps = ids
	}
	return out, nil
}

const bookingColumns = `id::text, start_at, end_at, title, attendee, notes, created_at, cancelled_at`

func (s *Bookings) scanBooking(row pgx.Row, b *appointments.Booking) error {
	return row.Scan(&b.ID, &b.Start, &b.End, &b.Title, &b.Attendee, &b.Notes, &b.CreatedAt, &b.CancelledAt)
}

// List returns the bookings that overlap [from, to), cancelled ones only if asked.
func (s *Bookings) List(ctx context.Context, from, to time.Time, withCancelled bool) ([]appointments.Booking, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+bookingColumns+` FROM bookings
		WHERE start_at < $2 AND end_at > $1 AND ($3 OR cancelled_at IS NULL) ORDER BY start_at, id`, from, to, withCancelled)
	if err != nil {
		return nil, Wrap("appointments.List", err)
	}
	out := []appointments.Booking{}
	for rows.Next() {
		var b appointments.Booking
		if err := s.scanBooking(rows, &b); err != nil {
			rows.Close()
			return nil, Wrap("appointments.List", err)
		}
		out = append(out, b)
	}
	return out, Wrap("appointments.List", rows.Err())
}

// Cancel marks a booking cancelled. Cancelling twice is not an error.
func (s *Bookings) Cancel(ctx context.Context, id string) (*appointments.Booking, error) {
	var b appointments.Booking
	err := s.scanBooking(s.db.Pool.QueryRow(ctx, `UPDATE bookings SET cancelled_at = coalesce(cancelled_at, now())
		WHERE id = $1::uuid RETURNING `+bookingColumns, id), &b)
	var pgErr *pgconn.PgError
	if errors.Is(err, pgx.ErrNoRows) || (errors.As(err, &pgErr) && pgErr.Code == "22P02") { // invalid uuid text
		return nil, tools.Errorf(tools.CodeNotFound, "no booking with id %q", tools.Truncate(id, 40))
	}
	if err != nil {
		return nil, Wrap("appointments.Cancel", err)
	}
	return &b, nil
}

// Busy returns the active bookings overlapping [from, to) as bare intervals: nothing
// else of a booking is read.
func (s *Bookings) Busy(ctx context.Context, from, to time.Time, _ *time.Location) ([]appointments.Interval, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT start_at, end_at FROM bookings
		WHERE cancelled_at IS NULL AND start_at < $2 AND end_at > $1`, from, to)
	if err != nil {
		return nil, Wrap("appointments.Busy", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (appointments.Interval, error) {
		var iv appointments.Interval
		err := r.Scan(&iv.Start, &iv.End)
		return iv, err
	})
	return out, Wrap("appointments.Busy", err)
}
