package appointments

import (
	"errors"
	"slices"
	"time"

	"github.com/teambition/rrule-go"
)

// icsResolve returns the instant at which the wall clock in loc shows wall (held in UTC
// fields), as RFC 5545 §3.3.5 reads it: a wall time in a daylight-saving gap with the offset
// before the gap, a wall time that occurs twice at its first occurrence. time.Date does
// neither reliably.
func icsResolve(wall time.Time, loc *time.Location) time.Time {
	if loc == time.UTC {
		return wall
	}
	// No zone changes its offset twice within a few days: the offsets a day and a half
	// before and after are the two that can apply.
	_, before := wall.Add(-36 * time.Hour).In(loc).Zone()
	_, after := wall.Add(36 * time.Hour).In(loc).Zone()
	withBefore := wall.Add(-time.Duration(before) * time.Second)
	withAfter := wall.Add(-time.Duration(after) * time.Second)
	shows := func(t time.Time) bool {
		_, off := t.In(loc).Zone()
		return t.Add(time.Duration(off) * time.Second).Equal(wall)
	}
	switch {
	case shows(withBefore) && shows(withAfter):
		if withAfter.Before(withBefore) {
			return withAfter.In(loc)
		}
		return withBefore.In(loc)
	case shows(withAfter):
		return withAfter.In(loc)
	default: // shows(withBefore), or in a gap
		return withBefore.In(loc)
	}
}

// icsWall is the wall clock of t, in UTC fields.
func icsWall(t time.Time) time.Time {
	_, off := t.Zone()
	return t.Add(time.Duration(off) * time.Second).UTC()
}

// icsSpan is the busy interval of an occurrence starting at wall in loc.
func icsSpan(wall time.Time, loc *time.Location, d icsDuration) Interval {
	start := icsResolve(wall, loc)
	end := start
	if d.days != 0 {
		end = icsResolve(wall.AddDate(0, 0, d.days), loc)
	}
	end = end.Add(d.exact)
	if end.Before(start) {
		start, end = end, start
	}
	return Interval{Start: start, End: end}
}

// duration is the length of each occurrence of e.
func (e *icsEvent) duration(cal *icsCalendar, def *time.Location) icsDuration {
	switch {
	case e.dur != nil:
		return *e.dur
	case e.end != nil && e.start.date && e.end.date:
		// Some producers end a one-day event on its own date; read that as the whole day.
		days := int(e.end.wall.Sub(e.start.wall).Hours() / 24)
		if days == 0 {
			days = 1
		}
		return icsDuration{days: days}
	case e.end != nil:
		return icsDuration{exact: e.end.instant(def).Sub(e.start.instant(def))}
	case e.recurrenceID != nil && e.master >= 0:
		return cal.events[e.master].duration(cal, def)
	case e.start.date:
		return icsDuration{days: 1}
	}
	return icsDuration{} // a point in time
}

// icsExpansion collects the busy intervals of one window.
type icsExpansion struct {
	from, to time.Time
	def      *time.Location
	out      []Interval
	budget   int // occurrences left for the whole feed
	// overCap lists, by position, the events whose whole span was made busy because they
	// went over a cap or could not be expanded.
	overCap []int
	gap     time.Duration // gaps shorter than this are closed; 0: none
}

// icsBusy is the result of expanding a calendar for one window.
type icsBusy struct {
	intervals []Interval
	overCap   []int // events made busy over their whole span, by position
	coarsened bool  // short gaps were closed to bound the intervals
}

// errICSOverCap stops the expansion of one event that went over a cap.
var errICSOverCap = errors.New("event over its expansion cap")

// busy returns the calendar's busy time that reaches into [from, to); see ParseICSBusy.
func (c *icsCalendar) busy(from, to time.Time, def *time.Location) icsBusy {
	if def == nil {
		def = time.UTC
	}
	if !from.Before(to) {
		return icsBusy{intervals: []Interval{}}
	}
	x := &icsExpansion{from: from, to: to, def: def, budget: maxICSExpansion}
	for i := range c.events {
		x.event(c, &c.events[i])
	}
	out := icsCloseGaps(icsUnion(x.out, def), x.gap)
	return icsBusy{intervals: out, overCap: x.overCap, coarsened: x.gap > 0}
}

func (x *icsExpansion) add(iv Interval) {
	if !iv.End.After(iv.Start) || !iv.Start.Before(x.to) || !iv.End.After(x.from) {
		return
	}
	if len(x.out) >= maxICSIntervals {
		x.compact()
	}
	x.out = append(x.out, iv)
}

// compact merges the collected intervals and, while more than half the cap remain, closes
// the gaps shorter than a doubling threshold, from one minute: no appointment fits in such
// a gap, and closing one can only make more time busy. The threshold stays for the rest
// of the window (see closeGaps).
func (x *icsExpansion) compact() {
	x.out = icsUnion(x.out, time.UTC)
	for len(x.out) > maxICSIntervals/2 {
		x.gap = max(2*x.gap, time.Minute)
		x.out = icsCloseGaps(x.out, x.gap)
	}
}

// icsCloseGaps joins merged, sorted intervals whose gap is shorter than gap.
func icsCloseGaps(ivs []Interval, gap time.Duration) []Interval {
	if gap <= 0 || len(ivs) == 0 {
		return ivs
	}
	out := ivs[:1]
	for _, iv := range ivs[1:] {
		if last := &out[len(out)-1]; iv.Start.Sub(last.End) < gap {
			last.End = maxTime(last.End, iv.End)
			continue
		}
		out = append(out, iv)
	}
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// event adds the busy time of one event. One that goes over a cap or whose rule cannot be
// expanded makes its whole span busy instead (see span).
func (x *icsExpansion) event(cal *icsCalendar, e *icsEvent) {
	if e.free {
		return
	}
	loc, dur := e.start.zone(x.def), e.duration(cal, x.def)
	if e.recurrenceID != nil || len(e.rules) == 0 && len(e.rdates) == 0 {
		x.add(icsSpan(e.start.wall, loc, dur)) // one occurrence: bounded by the feed's size
		return
	}
	if dur == (icsDuration{}) && !slices.ContainsFunc(e.rdates, func(p icsPeriod) bool { return p.end != nil || p.dur != nil }) {
		return // points in time take no time, however many
	}
	if err := x.expand(e, loc, dur); err != nil {
		x.overCap = append(x.overCap, e.num)
		x.add(x.span(e, loc, dur))
	}
}

// span is the time an event's occurrences can cover within the window: from its first
// occurrence (DTSTART or an earlier RDATE), or the window's start, to the end of the latest
// of its rules' UNTIL and its RDATEs, or the window's end when a rule has no UNTIL.
func (x *icsExpansion) span(e *icsEvent, loc *time.Location, dur icsDuration) Interval {
	iv := icsSpan(e.start.wall, loc, dur)
	extend := func(o Interval) {
		if o.Start.Before(iv.Start) {
			iv.Start = o.Start
		}
		iv.End = maxTime(iv.End, o.End)
	}
	for _, rd := range e.rdates {
		rloc := rd.at.zone(x.def)
		extend(icsSpan(rd.at.wall, rloc, dur))
		if rd.end != nil {
			extend(Interval{Start: rd.end.instant(x.def), End: rd.end.instant(x.def)})
		}
		if rd.dur != nil {
			extend(icsSpan(rd.at.wall, rloc, *rd.dur))
		}
	}
	for _, r := range e.rules {
		if last, ok := icsLastByCount(r.opt, e.start.wall); ok {
			extend(icsSpan(last, loc, dur))
			continue
		}
		if r.opt.Until.IsZero() {
			iv.End = maxTime(iv.End, x.to)
			continue
		}
		until := r.opt.Until // a UTC instant, or a wall clock in the event's zone
		if !r.untilUTC {
			until = icsResolve(until, loc)
		}
		if r.untilDate && !e.start.date {
			until = until.AddDate(0, 0, 1) // the whole last day
		}
		// The last occurrence starts at UNTIL at the latest.
		extend(icsSpan(icsWall(until.In(loc)), loc, dur))
	}
	if iv.Start.Before(x.from) {
		iv.Start = x.from
	}
	if iv.End.After(x.to) {
		iv.End = x.to
	}
	return iv
}

// icsLastByCount returns the wall clock of the last occurrence of a rule with COUNT and no
// BY parts, whose every period holds exactly one occurrence; ok is false for any other rule.
func icsLastByCount(o rrule.ROption, start time.Time) (last time.Time, ok bool) {
	if o.Count <= 0 || len(o.Bysetpos)+len(o.Bymonth)+len(o.Bymonthday)+len(o.Byyearday)+
		len(o.Byweekno)+len(o.Byweekday)+len(o.Byhour)+len(o.Byminute)+len(o.Bysecond)+
		len(o.Byeaster) > 0 {
		return time.Time{}, false
	}
	if o.Count > 1<<31 || o.Interval > 1<<31 {
		return time.Time{}, false
	}
	n := (o.Count - 1) * max(o.Interval, 1)
	if n > 1<<31 {
		return time.Time{}, false // 68 years of seconds: as good as endless
	}
	switch o.Freq {
	case rrule.YEARLY, rrule.MONTHLY:
		return time.Time{}, false // a 31st or a 29 February skips periods
	case rrule.WEEKLY:
		return start.AddDate(0, 0, 7*n), true
	case rrule.DAILY:
		return start.AddDate(0, 0, n), true
	case rrule.HOURLY:
		return start.Add(time.Duration(n) * time.Hour), true
	case rrule.MINUTELY:
		return start.Add(time.Duration(n) * time.Minute), true
	default:
		return start.Add(time.Duration(n) * time.Second), true
	}
}

// expand adds the occurrences of a series, or fails with errICSOverCap (or an expansion
// error) and leaves the event to span.
func (x *icsExpansion) expand(e *icsEvent, loc *time.Location, dur icsDuration) error {
	// Occurrences removed by EXDATE or replaced by an override: by instant, or by local
	// date for a DATE that removes from a timed event.
	var removed map[int64]bool
	var removedDays map[time.Time]bool
	for _, t := range slices.Concat(e.exdates, e.overridden) {
		if t.date && !e.start.date {
			if removedDays == nil {
				removedDays = make(map[time.Time]bool)
			}
			removedDays[t.wall] = true
			continue
		}
		if removed == nil {
			removed = make(map[int64]bool)
		}
		removed[t.instant(x.def).Unix()] = true
	}
	count := 0
	occur := func(iv Interval, wall time.Time) error {
		if count++; count > maxICSOccurrences {
			return errICSOverCap
		}
		if x.budget--; x.budget < 0 {
			return errICSOverCap
		}
		if removed[iv.Start.Unix()] || removedDays[wall.Truncate(24*time.Hour)] {
			return nil
		}
		x.add(iv)
		return nil
	}

	if err := occur(icsSpan(e.start.wall, loc, dur), e.start.wall); err != nil {
		return err
	}
	for i := range e.rules {
		if err := x.rule(&e.rules[i], e, loc, dur, occur); err != nil {
			return err
		}
	}
	for _, rd := range e.rdates {
		rloc := rd.at.zone(x.def)
		iv := icsSpan(rd.at.wall, rloc, dur)
		switch {
		case rd.end != nil:
			iv = Interval{Start: iv.Start, End: rd.end.instant(x.def)}
		case rd.dur != nil:
			iv = icsSpan(rd.at.wall, rloc, *rd.dur)
		}
		if iv.End.Before(iv.Start) {
			iv.Start, iv.End = iv.End, iv.Start
		}
		if err := occur(iv, icsWall(iv.Start.In(loc))); err != nil {
			return err
		}
	}
	return nil
}

// rule expands one RRULE of e on the wall clock of loc, from the last whole period before
// the window to the first occurrence that can no longer reach into it.
func (x *icsExpansion) rule(r *icsRule, e *icsEvent, loc *time.Location, dur icsDuration, occur func(Interval, time.Time) error) (err error) {
	defer func() {
		if recover() != nil {
			err = errors.New("recurrence rule cannot be expanded")
		}
	}()
	o := r.opt
	o.Dtstart = e.start.wall
	if r.untilUTC {
		o.Until = icsWall(o.Until.In(loc))
	} else if r.untilDate && !e.start.date {
		o.Until = o.Until.AddDate(0, 0, 1).Add(-time.Second) // the whole last day
	}
	// An occurrence can reach into the window only if it starts within its length of it;
	// the extra days cover the zone's offset and daylight-saving changes.
	reach := max(dur.exact, -dur.exact)
	reachDays := max(dur.days, -dur.days) + 2
	limit := icsWall(x.from.In(loc)).Add(-reach).AddDate(0, 0, -reachDays)
	stop := icsWall(x.to.In(loc)).Add(reach).AddDate(0, 0, reachDays)
	if !o.Until.IsZero() && o.Until.Before(limit) {
		return nil // the series ended before the window
	}
	icsSkipAhead(&o, limit)
	rr, err := rrule.NewRRule(o)
	if err != nil {
		return errors.New("recurrence rule is out of bounds")
	}
	next := rr.Iterator()
	for {
		wall, ok := next()
		if !ok || wall.After(stop) {
			return nil
		}
		if err := occur(icsSpan(wall, loc, dur), wall); err != nil {
			return err
		}
	}
}

// icsWeekdays maps time.Weekday to rrule-go's weekdays.
var icsWeekdays = [7]rrule.Weekday{rrule.SU, rrule.MO, rrule.TU, rrule.WE, rrule.TH, rrule.FR, rrule.SA}

// icsSkipAhead moves a rule's DTSTART forward by whole periods (INTERVAL times FREQ) to a
// period that ends before limit, so that a series begun years ago costs no more to expand
// than a new one. The parts of the rule that RFC 5545 takes from DTSTART are made explicit
// first, so that the rule yields the same occurrences from there on. A rule with COUNT is
// left alone: its count runs from the original DTSTART.
func icsSkipAhead(o *rrule.ROption, limit time.Time) {
	d := o.Dtstart
	if o.Count > 0 || !d.Before(limit) {
		return
	}
	n := max(o.Interval, 1)
	if o.Freq < rrule.HOURLY && len(o.Byhour) == 0 {
		o.Byhour = []int{d.Hour()}
	}
	if o.Freq < rrule.MINUTELY && len(o.Byminute) == 0 {
		o.Byminute = []int{d.Minute()}
	}
	if o.Freq < rrule.SECONDLY && len(o.Bysecond) == 0 {
		o.Bysecond = []int{d.Second()}
	}
	noDayRule := len(o.Byweekno) == 0 && len(o.Byyearday) == 0 && len(o.Bymonthday) == 0 &&
		len(o.Byweekday) == 0 && len(o.Byeaster) == 0
	day := time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, time.UTC)
	const week = 7 * 24 * time.Hour
	var start time.Time
	switch o.Freq {
	case rrule.YEARLY:
		if noDayRule {
			if len(o.Bymonth) == 0 {
				o.Bymonth = []int{int(d.Month())}
			}
			o.Bymonthday = []int{d.Day()}
		}
		years := limit.Year() - d.Year() - 1
		start = time.Date(d.Year()+years/n*n, time.January, 1, 0, 0, 0, 0, time.UTC)
	case rrule.MONTHLY:
		if noDayRule {
			o.Bymonthday = []int{d.Day()}
		}
		months := (limit.Year()-d.Year())*12 + int(limit.Month()) - int(d.Month()) - 1
		start = time.Date(d.Year(), d.Month()+time.Month(months/n*n), 1, 0, 0, 0, 0, time.UTC)
	case rrule.WEEKLY:
		if noDayRule {
			o.Byweekday = []rrule.Weekday{icsWeekdays[d.Weekday()]}
		}
		// Periods are weeks beginning on WKST (rrule-go numbers Monday 0).
		weekStart := day.AddDate(0, 0, -((int(d.Weekday())+6)%7-o.Wkst.Day()+7)%7)
		weeks := int(limit.Sub(weekStart)/week) - 1
		start = weekStart.AddDate(0, 0, 7*(weeks/n*n))
	case rrule.DAILY:
		days := int(limit.Sub(day)/(24*time.Hour)) - 1
		start = day.AddDate(0, 0, days/n*n)
	default:
		unit := map[rrule.Frequency]time.Duration{rrule.HOURLY: time.Hour, rrule.MINUTELY: time.Minute, rrule.SECONDLY: time.Second}[o.Freq]
		step := time.Duration(n) * unit
		start = d.Add((limit.Sub(d)/step - 1) * step)
	}
	if start.After(d) {
		o.Dtstart = start
	}
}

// icsUnion sorts intervals and merges those that overlap or touch, in loc.
func icsUnion(ivs []Interval, loc *time.Location) []Interval {
	slices.SortFunc(ivs, func(a, b Interval) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return a.End.Compare(b.End)
	})
	out := []Interval{}
	for _, iv := range ivs {
		if n := len(out); n > 0 && !iv.Start.After(out[n-1].End) {
			if iv.End.After(out[n-1].End) {
				out[n-1].End = iv.End
			}
			continue
		}
		out = append(out, iv)
	}
	for i := range out {
		out[i] = Interval{Start: out[i].Start.In(loc), End: out[i].End.In(loc)}
	}
	return out
}
