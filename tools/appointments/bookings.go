package appointments

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/tools"
)

// Booking is an appointment as its owner manages it. It is never part of a tool's
// output: get_free_slots sees bookings only as busy intervals.
type Booking struct {
	ID          string     `json:"id"`
	Start       time.Time  `json:"start"`
	End         time.Time  `json:"end"`
	Title       string     `json:"title"`
	Attendee    string     `json:"attendee"`
	Notes       string     `json:"notes"`
	CreatedAt   time.Time  `json:"createdAt"`
	CancelledAt *time.Time `json:"cancelledAt,omitempty"`
}

// NewBooking is what creating a booking takes.
type NewBooking struct {
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Title    string    `json:"title"`
	Attendee string    `json:"attendee"`
	Notes    string    `json:"notes"`
}

// Validate checks a new booking; the errors name the field.
func (b NewBooking) Validate() error {
	var errs []error
	if b.Start.IsZero() {
		errs = append(errs, errors.New("start is required (RFC 3339, e.g. 2026-12-01T10:00:00+01:00)"))
	}
	if b.End.IsZero() {
		errs = append(errs, errors.New("end is required (RFC 3339)"))
	}
	if !b.Start.IsZero() && !b.End.IsZero() {
		if !b.End.After(b.Start) {
			errs = append(errs, errors.New("end must be after start"))
		} else if b.End.Sub(b.Start) > 31*24*time.Hour {
			errs = append(errs, errors.New("a booking may last at most 31 days"))
		}
		if b.Start.Year() < 2000 || b.Start.Year() > 2200 {
			errs = append(errs, errors.New("start must be between the years 2000 and 2200"))
		}
	}
	for name, v := range map[string]string{"title": b.Title, "attendee": b.Attendee} {
		if len(v) > 500 {
			errs = append(errs, fmt.Errorf("%s must be at most 500 characters", name))
		}
	}
	if len(b.Notes) > 5000 {
		errs = append(errs, errors.New("notes must be at most 5000 characters"))
	}
	return errors.Join(errs...)
}

// Bookings is the bookings table.
type Bookings struct {
	db *postgres.DB
}

// NewBookings returns the bookings store on db.
func NewBookings(db *postgres.DB) *Bookings { return &Bookings{db: db} }

// Created is the outcome of Add: the booking and the active bookings it overlaps
// (allowed, but worth knowing).
type Created struct {
	Booking  Booking  `json:"booking"`
	Overlaps []string `json:"overlaps"`
	// Replayed is true when an earlier request with the same Idempotency-Key stored it.
	Replayed bool `json:"replayed"`
}

// Add stores b. With an idempotency key, a repeat of the same request returns the
// booking stored the first time; the same key with another request is a conflict.
// The insert is one statement: the booking is stored whole or not at all.
func (s *Bookings) Add(ctx context.Context, b NewBooking, idempotencyKey string) (*Created, error) {
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
	out := &Created{Overlaps: []string{}}
	err := s.scanBooking(s.db.Pool.QueryRow(ctx, `INSERT INTO bookings (start_at, end_at, title, attendee, notes, idempotency_key, request_hash)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (idempotency_key) DO NOTHING
		RETURNING `+bookingColumns, b.Start, b.End, b.Title, b.Attendee, b.Notes, key, h[:]), &out.Booking)
	if errors.Is(err, pgx.ErrNoRows) {
		// The key exists: the same request again, or another one.
		var stored []byte
		err = s.db.Pool.QueryRow(ctx, `SELECT request_hash FROM bookings WHERE idempotency_key = $1`, idempotencyKey).Scan(&stored)
		if err != nil {
			return nil, postgres.Wrap("appointments.Add", err)
		}
		if string(stored) != string(h[:]) {
			return nil, tools.Errorf(tools.CodeIdempotencyConflict, "this Idempotency-Key was already used for another booking; use a new key for a new booking")
		}
		err = s.scanBooking(s.db.Pool.QueryRow(ctx, `SELECT `+bookingColumns+` FROM bookings WHERE idempotency_key = $1`, idempotencyKey), &out.Booking)
		out.Replayed = true
	}
	if err != nil {
		return nil, postgres.Wrap("appointments.Add", err)
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT id::text FROM bookings WHERE cancelled_at IS NULL AND id <> $1
		AND start_at < $3 AND end_at > $2 ORDER BY start_at`, out.Booking.ID, out.Booking.Start, out.Booking.End)
	if err != nil {
		return nil, postgres.Wrap("appointments.Add", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, postgres.Wrap("appointments.Add", err)
	}
	if ids != nil {
		out.Overlaps = ids
	}
	return out, nil
}

const bookingColumns = `id::text, start_at, end_at, title, attendee, notes, created_at, cancelled_at`

func (s *Bookings) scanBooking(row pgx.Row, b *Booking) error {
	return row.Scan(&b.ID, &b.Start, &b.End, &b.Title, &b.Attendee, &b.Notes, &b.CreatedAt, &b.CancelledAt)
}

// List returns the bookings that overlap [from, to), cancelled ones only if asked.
func (s *Bookings) List(ctx context.Context, from, to time.Time, withCancelled bool) ([]Booking, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+bookingColumns+` FROM bookings
		WHERE start_at < $2 AND end_at > $1 AND ($3 OR cancelled_at IS NULL) ORDER BY start_at, id`, from, to, withCancelled)
	if err != nil {
		return nil, postgres.Wrap("appointments.List", err)
	}
	out := []Booking{}
	for rows.Next() {
		var b Booking
		if err := s.scanBooking(rows, &b); err != nil {
			rows.Close()
			return nil, postgres.Wrap("appointments.List", err)
		}
		out = append(out, b)
	}
	return out, postgres.Wrap("appointments.List", rows.Err())
}

// Cancel marks a booking cancelled. Cancelling twice is not an error.
func (s *Bookings) Cancel(ctx context.Context, id string) (*Booking, error) {
	var b Booking
	err := s.scanBooking(s.db.Pool.QueryRow(ctx, `UPDATE bookings SET cancelled_at = coalesce(cancelled_at, now())
		WHERE id = $1::uuid RETURNING `+bookingColumns, id), &b)
	var pgErr *pgconn.PgError
	if errors.Is(err, pgx.ErrNoRows) || (errors.As(err, &pgErr) && pgErr.Code == "22P02") { // invalid uuid text
		return nil, tools.Errorf(tools.CodeNotFound, "no booking with id %q", clipID(id))
	}
	if err != nil {
		return nil, postgres.Wrap("appointments.Cancel", err)
	}
	return &b, nil
}

// Busy returns the active bookings overlapping [from, to) as bare intervals: nothing
// else of a booking is read.
func (s *Bookings) Busy(ctx context.Context, from, to time.Time, _ *time.Location) ([]Interval, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT start_at, end_at FROM bookings
		WHERE cancelled_at IS NULL AND start_at < $2 AND end_at > $1`, from, to)
	if err != nil {
		return nil, postgres.Wrap("appointments.Busy", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Interval, error) {
		var iv Interval
		err := r.Scan(&iv.Start, &iv.End)
		return iv, err
	})
	return out, postgres.Wrap("appointments.Busy", err)
}

func clipID(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
