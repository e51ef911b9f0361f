package budget

import "time"

// ExpiresAt is when the reservation's own lease ends: its call's deadline plus the margin.
func (r *Reservation) ExpiresAt() time.Time {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	return r.expires
}

// Outlive makes the reservation's call look as if it outlived its deadline and margin.
func (r *Reservation) Outlive() {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	r.expires = time.Now().Add(-time.Second)
}

// ReservationMargin is the margin past a call's deadline.
const ReservationMargin = reservationMargin

// RenewDue makes every lease due for renewal, so that the next Flush writes it and finds
// out whether another replica reclaimed it.
func (b *Budget) RenewDue() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, l := range b.leases {
		l.renewed = time.Time{}
	}
}

// ReadPressure reads the day's row for Pressure now, as its background read does.
func (b *Budget) ReadPressure() { b.readPressure() }
