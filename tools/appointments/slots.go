package appointments

import (
	"cmp"
	"slices"
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

	lo, hi := window(s, q, loc)
	if hi.Sub(lo) < d {
		return slots, false
	}
	w := slotWalk{s: s, loc: loc, lo: lo, window: hi.Sub(lo), d: d,
		spans: busySpans(busy, lo, hi.Sub(lo), s.BufferBefore, s.BufferAfter)}
	slots = w.collect(hi, limit)
	slices.SortFunc(slots, func(x, y Slot) int { return x.Start.Compare(y.Start) })
	if len(slots) > limit {
		return slots[:limit:limit], true
	}
	return slots, false
}

// window is the part of the query's range a slot may lie in: from the later of From and
// Now + MinimumNotice, to the earlier of To and the horizon.
func window(s *Schedule, q Query, loc *time.Location) (lo, hi time.Time) {
	now := q.Now.In(loc)
	lo = q.From
	if earliest := now.Add(s.MinimumNotice); earliest.After(lo) {
		lo = earliest
	}
	hi = q.To
	// A hand-built schedule could exceed the validated horizon; bounding it bounds the work.
	if horizon := now.AddDate(0, 0, min(s.HorizonDays, maxHorizonDays)); horizon.Before(hi) {
		hi = horizon
	}
	return lo, hi
}

// slotWalk walks the schedule's opening hours over a window, a few days at a time.
type slotWalk struct {
	s      *Schedule
	loc    *time.Location
	lo     time.Time
	window time.Duration
	d      time.Duration // the slots' length
	spans  []span
}

// collect returns the free slots up to hi: candidates are collected a few days at a
// time and then checked against all busy spans at once, so that a query that fills the
// limit early stops early.
func (w *slotWalk) collect(hi time.Time, limit int) []Slot {
	slots := []Slot{}
	closed := make([][2]int64, len(w.s.Closed))
	for i, c := range w.s.Closed {
		closed[i] = [2]int64{c.First.dayNumber(), c.Last.dayNumber()}
	}
	chunk := max(4*limit, 4096)
	var cands []candidate
	// Dates are walked as UTC midnights, which are exactly the local calendar dates. The walk
	// starts a day early so that nothing near a midnight transition is missed.
	y, m, dd := w.lo.In(w.loc).Date()
	date := time.Date(y, m, dd-1, 0, 0, 0, 0, time.UTC)
	y, m, dd = hi.In(w.loc).Date()
	lastDate := time.Date(y, m, dd, 0, 0, 0, 0, time.UTC)
	for ; !date.After(lastDate); date = date.AddDate(0, 0, 1) {
		if isClosed(closed, date.Unix()/86400) {
			continue
		}
		cands = w.day(cands, date)
		if len(cands) >= chunk {
			slots = appendFree(slots, cands, w.spans, w.d)
			cands = cands[:0]
			// Later dates only hold later slots, so the rest cannot matter.
			if len(slots) > limit {
				return slots
			}
		}
	}
	return appendFree(slots, cands, w.spans, w.d)
}

// day appends the candidates of one date's opening hours that lie in the window.
func (w *slotWalk) day(cands []candidate, date time.Time) []candidate {
	for _, r := range w.s.Weekly[date.Weekday()] {
		rangeEnd := time.Duration(r.End) * time.Minute
		for off := time.Duration(r.Start) * time.Minute; off+w.d <= rangeEnd; off += w.s.Step {
			start, ok := slotAt(w.loc, date, off, w.d)
			if !ok {
				continue
			}
			if a := start.Sub(w.lo); a >= 0 && a <= w.window-w.d {
				cands = append(cands, candidate{a, start})
			}
		}
	}
	return cands
}

// candidate is a slot that passed every check but the busy time, with its start as an
// offset from the start of the query window.
type candidate struct {
	a     time.Duration
	start time.Time
}

// span is a busy interval, extended by the buffers, as offsets from the start of the query
// window, so that comparisons are integer comparisons.
type span struct{ start, end time.Duration }

// busySpans extends each busy interval by the buffers and keeps those that reach into the
// window [0, window). They stay unsorted and may overlap: appendFree needs neither.
func busySpans(busy []Interval, lo time.Time, window, before, after time.Duration) []span {
	// Offsets are computed from Unix seconds rather than with Time.Sub, which is several
	// times slower. Clamping to a margin wider than the buffers keeps the arithmetic from
	// overflowing without changing which spans reach the window.
	loSec, loNsec := lo.Unix(), lo.Nanosecond()
	marginSec := int64((before+after)/time.Second) + 2
	minSec, maxSec := -marginSec, int64(window/time.Second)+marginSec
	offset := func(t time.Time) time.Duration {
		sec := min(max(t.Unix()-loSec, minSec), maxSec)
		return time.Duration(sec)*time.Second + time.Duration(t.Nanosecond()-loNsec)
	}
	spans := make([]span, 0, len(busy))
	for _, b := range busy {
		start, end := offset(b.Start), offset(b.End)
		if end < start {
			start, end = end, start
		}
		start, end = start-before, end+after
		if end < 0 || start >= window {
			continue
		}
		spans = append(spans, span{start, end})
	}
	return spans
}

// appendFree appends the candidates of length d that meet no busy span. Sorted by start,
// the candidates a span meets are a contiguous run; it is found through an index and marked
// in a difference array. That is O(candidates + spans) on average, with no sort of the busy
// time and no pairwise comparison.
func appendFree(slots []Slot, cands []candidate, spans []span, d time.Duration) []Slot {
	if len(cands) == 0 {
		return slots
	}
	if !slices.IsSortedFunc(cands, compareCandidates) {
		slices.SortFunc(cands, compareCandidates)
	}
	// Equal starts only come from overlapping opening ranges; offer each slot once.
	cands = slices.CompactFunc(cands, func(x, y candidate) bool { return x.a == y.a })
	idx := newStartIndex(cands)
	marks := make([]int32, len(cands)+1)
	for _, sp := range spans {
		// A slot [a, a+d) meets [sp.start, sp.end) when sp.start-d < a < sp.end.
		if sp.end <= idx.first || sp.start-d >= idx.last {
			continue
		}
		marks[idx.search(sp.start-d+1)]++
		marks[idx.search(sp.end)]--
	}
	var covered int32
	for k, c := range cands {
		covered += marks[k]
		if covered == 0 {
			slots = append(slots, Slot{Start: c.start, End: c.start.Add(d)})
		}
	}
	return slots
}

// startIndex finds the first of sorted candidates that starts at or after an offset. Bucket
// k holds the first candidate at or after first + k·width; with about one candidate per
// bucket a search is a lookup and a short scan. (A binary search here cost twice as much:
// with random busy time its branches are mispredicted.)
type startIndex struct {
	offs               []time.Duration
	buckets            []int32
	first, last, width time.Duration
}

func newStartIndex(cands []candidate) *startIndex {
	x := &startIndex{offs: make([]time.Duration, len(cands))}
	for i, c := range cands {
		x.offs[i] = c.a
	}
	x.first, x.last = x.offs[0], x.offs[len(x.offs)-1]
	x.width = (x.last-x.first)/time.Duration(len(x.offs)) + 1
	for i, at := 0, x.first; at <= x.last; at += x.width {
		for x.offs[i] < at {
			i++
		}
		x.buckets = append(x.buckets, int32(i))
	}
	return x
}

func (x *startIndex) search(a time.Duration) int {
	if a <= x.first {
		return 0
	}
	if a > x.last {
		return len(x.offs)
	}
	i := int(x.buckets[(a-x.first)/x.width])
	for x.offs[i] < a {
		i++
	}
	return i
}

func compareCandidates(x, y candidate) int { return cmp.Compare(x.a, y.a) }

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
