package appointments

import (
	"context"
	"errors"
	"fmt"
	"time"
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

// BookingStore keeps the owner's bookings; internal/postgres.Bookings is the one in
// PostgreSQL. get_free_slots reads them only through Busy.
type BookingStore interface {
	BusySource
	// Add stores b. With an idempotency key, a repeat of the same request returns the
	// booking stored the first time; the same key with another request is a conflict.
	Add(ctx context.Context, b NewBooking, idempotencyKey string) (*Created, error)
	// List returns the bookings that overlap [from, to), cancelled ones only if asked.
	List(ctx context.Context, from, to time.Time, withCancelled bool) ([]Booking, error)
	// Cancel marks a booking cancelled; cancelling twice is not an error.
	Cancel(ctx context.Context, id string) (*Booking, error)
}

// Created is the outcome of Add: the booking and the active bookings it overlaps
// (allowed, but worth knowing).
type Created struct {
	Booking  Booking  `json:"booking"`
	Overlaps []string `json:"overlaps"`
	// Replayed is true when an earlier request with the same Idempotency-Key stored it.
	Replayed bool `json:"replayed"`
}
