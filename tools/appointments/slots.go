package appointments

import (
	"cmp"
	"slices"
	"sort"
	"time"
)

// DefaultLimit caps the slots of one query when Query.Limit is not set.
const DefaultLimit = 200

// Interval is busy time from any source (a booking, a calendar event), half-open [Start, End).
// It is input only: nothing of it is ever copied into a Slot.
type Interval struct{ Start, End time.Time }

// Query asks for free slots of one length within [From, To).
type Query struct {
	From, To time.Time
	// Duration is the length of each slot; 0 means the schedule's slot length.
	Duration time.Duration
	// Now is the injected clock for minimum notice and horizon. A zero Now yields no slots.
	Now time.Time
	// Limit caps the number of slots; 0 or less means DefaultLimit.
	Limit int
}

// Slot is a free time. Its only fields are its bounds, so it cannot carry anything about a
// booking. Times are in the schedule's location.
type Slot struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

// FreeSlots returns the free slots of the schedule within the query, sorted by start and
// capped at the limit; truncated reports that more slots exist.
//
// Candidate slots start at each opening range's start and every Step after it, as local
// wall-clock times on each local date. A slot is offered if it lies within one opening range,
// its wall-clock length equals its real length (so no slot spans a daylight-saving jump, and
// a wall-clock start in a repeated hour is offered at most once, at the earliest instant that
// fits), it does not overlap any busy interval extended by the buffers, it starts no earlier
// than Now + MinimumNotice, it lies within [From, To) and ends no later than HorizonDays
// calendar days after Now, and its local date is not closed.
//
// Busy intervals may be unsorted, overlap, or span days; one whose End is before its Start
// is taken with its ends swapped, so malformed input can hide slots but never invent them.
func FreeSlots(s *Schedule, q Query, busy []Interval) (slots []Slot, truncated bool) {
	slots = []Slot{}
	if s == nil || s.Step <= 0 {
		return slots, false
	}
	d := q.Duration
	if d == 0 {
		d = s.Slot
	}
	if d <= 0 {
		return slots, false
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	loc := s.Location
	if loc == nil {
		loc = time.UTC
	}

	now := q.Now.In(loc)
	lo := q.From
	if earliest := now.Add(s.MinimumNotice); earliest.After(lo) {
		lo = earliest
	}
	hi := q.To
	if horizon := now.AddDate(0, 0, s.HorizonDays); horizon.Before(hi) {
		hi = horizon
	}
	if hi.Sub(lo) < d {
		return slots, false
	}

	blocked := mergeBusy(busy, lo, hi, s.BufferBefore, s.BufferAfter)
	closed := make([][2]int64, len(s.Closed))
	for i, c := range s.Closed {
		closed[i] = [2]int64{c.First.dayNumber(), c.Last.dayNumber()}
	}

	// Dates are walked as UTC midnights, which are exactly the local calendar dates. The walk
	// starts a day early so that nothing near a midnight transition is missed.
	y, m, dd := lo.In(loc).Date()
	date := time.Date(y, m, dd-1, 0, 0, 0, 0, time.UTC)
	y, m, dd = hi.In(loc).Date()
	lastDate := time.Date(y, m, dd, 0, 0, 0, 0, time.UTC)
	for ; !date.After(lastDate); date = date.AddDate(0, 0, 1) {
		day := date.Unix() / 86400
		if isClosed(closed, day) {
			continue
		}
		for _, r := range s.Weekly[date.Weekday()] {
			rangeEnd := time.Duration(r.End) * time.Minute
			for off := time.Duration(r.Start) * time.Minute; off+d <= rangeEnd; off += s.Step {
				start, ok := slotAt(loc, date, off, d)
				if !ok {
					continue
				}
				end := start.Add(d)
				if start.Before(lo) || end.After(hi) || overlaps(blocked, start.Sub(lo), end.Sub(lo)) {
					continue
				}
				slots = append(slots, Slot{Start: start, End: end})
			}
		}
		// Later dates only add later slots, so once past the limit the rest cannot matter.
		if len(slots) > limit {
			slots = sortSlots(slots)
			if len(slots) > limit {
				break
			}
		}
	}
	slots = sortSlots(slots)
	if len(slots) > limit {
		return slots[:limit:limit], true
	}
	return slots, false
}

// slotAt returns the instant at which a slot of length d starting at wall-clock offset off on
// date begins: the earliest instant with that wall-clock time whose end, d later, shows the
// wall-clock time off+d. It reports false inside a spring-forward gap and for a slot across
// any clock change.
func slotAt(loc *time.Location, date time.Time, off, d time.Duration) (time.Time, bool) {
	midnight := date.Unix() // the wall clock's local midnight, counted as if it were UTC
	starts, n := wallInstants(loc, date, off, midnight)
	for _, start := range starts[:n] {
		if wallOffset(start.Add(d), midnight) == off+d {
			return start, true
		}
	}
	return time.Time{}, false
}

// wallInstants returns the instants, earliest first, at which the wall clock in loc shows
// date plus off: none in a spring-forward gap, two in an autumn repeated hour.
func wallInstants(loc *time.Location, date time.Time, off time.Duration, midnight int64) (out [2]time.Time, n int) {
	y, m, d := date.Date()
	t := time.Date(y, m, d, 0, 0, int(off/time.Second), int(off%time.Second), loc)
	if wallOffset(t, midnight) != off {
		return out, 0 // time.Date moved it out of a gap
	}
	// time.Date picks one occurrence of a repeated wall time; look for the other one just
	// across the zone transition before or after t.
	_, zone := t.Zone()
	from, until := t.ZoneBounds()
	if !from.IsZero() {
		if _, prev := from.Add(-time.Second).Zone(); prev > zone {
			u := t.Add(-time.Duration(prev-zone) * time.Second)
			if u.Before(from) && wallOffset(u, midnight) == off {
				out[n] = u
				n++
			}
		}
	}
	out[n] = t
	n++
	if !until.IsZero() {
		if _, next := until.Zone(); next < zone {
			u := t.Add(time.Duration(zone-next) * time.Second)
			if !u.Before(until) && wallOffset(u, midnight) == off {
				out[n] = u
				n++
			}
		}
	}
	return out, n
}

// wallOffset is how far t's local wall clock is past the given local midnight.
func wallOffset(t time.Time, midnight int64) time.Duration {
	_, zone := t.Zone()
	return time.Duration(t.Unix()+int64(zone)-midnight)*time.Second + time.Duration(t.Nanosecond())
}

func isClosed(closed [][2]int64, day int64) bool {
	for _, c := range closed {
		if c[0] <= day && day <= c[1] {
			return true
		}
	}
	return false
}

// span is a busy interval as offsets from the start of the query window, which makes the
// sort and the searches integer comparisons.
type span struct{ start, end time.Duration }

// mergeBusy extends each busy interval by the buffers, keeps those that reach into
// [lo, hi), and merges them into sorted, disjoint, non-touching spans.
func mergeBusy(busy []Interval, lo, hi time.Time, before, after time.Duration) []span {
	spans := make([]span, 0, len(busy))
	for _, b := range busy {
		start, end := b.Start, b.End
		if end.Before(start) {
			start, end = end, start
		}
		start, end = start.Add(-before), end.Add(after)
		if end.Before(lo) || !start.Before(hi) {
			continue
		}
		spans = append(spans, span{start.Sub(lo), end.Sub(lo)})
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.start, b.start) })
	merged := spans[:0]
	for _, sp := range spans {
		if k := len(merged) - 1; k >= 0 && sp.start <= merged[k].end {
			merged[k].end = max(merged[k].end, sp.end)
			continue
		}
		merged = append(merged, sp)
	}
	return merged
}

// overlaps reports whether [a, b) meets a blocked span. Spans are disjoint and sorted, so
// their ends are sorted too and a binary search finds the only candidate.
func overlaps(blocked []span, a, b time.Duration) bool {
	i := sort.Search(len(blocked), func(i int) bool { return blocked[i].end > a })
	return i < len(blocked) && blocked[i].start < b
}

func sortSlots(slots []Slot) []Slot {
	slices.SortFunc(slots, func(x, y Slot) int {
		if c := x.Start.Compare(y.Start); c != 0 {
			return c
		}
		return x.End.Compare(y.End)
	})
	return slices.CompactFunc(slots, func(x, y Slot) bool {
		return x.Start.Equal(y.Start) && x.End.Equal(y.End)
	})
}
