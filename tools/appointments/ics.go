package appointments

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	ics "github.com/arran4/golang-ical"
	"github.com/teambition/rrule-go"
)

// Limits on one iCalendar feed, so that a broken or hostile calendar (anyone can send an
// invitation that lands in it) costs bounded memory and CPU time. Going over a limit on the
// input is an error. Going over a limit on the expansion fails closed for the event that did,
// never for the feed: that event's whole span is busy (see ParseICSBusy). Nothing is dropped
// in silence, since a dropped event would show busy time as free.
const (
	maxICSBytes = 5 << 20
	// maxICSDepth bounds the nesting of components (VCALENDAR > VEVENT > VALARM is 3),
	// because the parser recurses into them.
	maxICSDepth = 8
	// maxICSZones bounds the distinct TZID names of a feed; each unknown one costs lookups.
	maxICSZones = 64
	// maxICSOccurrences bounds the occurrences of one event up to the end of a window,
	// counted after the whole recurrence periods before the window have been skipped.
	maxICSOccurrences = 10_000
	// maxICSExpansion bounds the occurrences of all events of a feed together.
	maxICSExpansion = 100_000
	// maxICSIntervals bounds the busy intervals that reach into a window.
	maxICSIntervals = 50_000
	// maxICSRuleProbe bounds the time spent finding rules that never occur (see icsProbe).
	maxICSRuleProbe = 2 * time.Second
)

// ParseICSBusy returns the busy time of an iCalendar feed (RFC 5545) that reaches into the
// window [from, to): each busy interval that overlaps the window, whole rather than clipped
// (so that buffers around it still apply), sorted, with overlapping and touching intervals
// merged, expressed in defaultLoc. Nothing of an event but its time is kept. A nil
// defaultLoc means UTC.
//
// How events are read:
//   - Only VEVENTs count. STATUS:CANCELLED and TRANSP:TRANSPARENT events take no time;
//     tentative ones do.
//   - The length comes from DTEND or DURATION. Without either, an all-day event lasts one
//     day and a timed event is a point in time (RFC 5545 §3.6.1), which takes no time and is
//     left out. An event without DTSTART has no time and is left out as well.
//   - A date-time ending in Z is UTC; one with TZID is read in that IANA zone, also when the
//     name carries a path prefix such as "/mozilla.org/20050126_1/Europe/Berlin". A TZID that
//     names no IANA zone (VTIMEZONE definitions are not interpreted) and a floating time are
//     read in defaultLoc.
//   - All-day (DATE) events make whole local days busy in defaultLoc, the schedule's zone,
//     whatever zone the calendar was written in.
//   - RRULE (several allowed), RDATE (DATE, DATE-TIME or PERIOD) and EXDATE (several, comma
//     lists, TZID) make up the occurrences, DTSTART always being the first. Rules are
//     expanded on the wall clock of the event's zone, so a weekly 10:00 stays at 10:00
//     across daylight-saving changes. An EXDATE removes the occurrence that starts at that
//     instant; a DATE-valued EXDATE of a timed event removes that day's occurrences. EXRULE
//     (deprecated) is ignored, which can only leave more time busy.
//   - An override (RECURRENCE-ID, same UID) replaces the occurrence that started at that
//     time: by its own time, or by nothing when it is cancelled or transparent. Without DTEND
//     or DURATION it keeps the length of its series. RANGE=THISANDFUTURE is read as this one
//     occurrence only.
//   - A wall time that daylight saving skips is read with the offset before the gap; one
//     that occurs twice means its first occurrence (RFC 5545 §3.3.5).
//
// It fails, rather than drop anything, on input over 5 MB, a malformed or cut-off calendar,
// or a value it cannot read. Error messages name the event by its position and the property,
// never its content.
//
// Expansion is capped at 10 000 occurrences of one event up to the end of the window and
// 100 000 for the whole feed. An event that goes over a cap, or whose rule cannot be
// expanded, fails closed on its own: its whole span is busy, from its first occurrence (or
// the window's start) to the end of its last rule's UNTIL plus its length, or to the window's
// end. So one hostile invitation (RRULE:FREQ=MINUTELY, say) blocks the time it claims and no
// more, and the rest of the calendar keeps working. Over 50 000 busy intervals in the window,
// gaps too short for any appointment are closed (again: more busy, never less).
func ParseICSBusy(data []byte, from, to time.Time, defaultLoc *time.Location) ([]Interval, error) {
	cal, err := icsParse(data, maxICSRuleProbe)
	if err != nil {
		return nil, fmt.Errorf("appointments.ParseICSBusy: %w", err)
	}
	return cal.busy(from, to, defaultLoc).intervals, nil
}

// icsCalendar is a parsed feed: the time properties of its events and nothing else, checked
// once so that expanding them for a window cannot fail on syntax. It is read-only after
// icsParse and safe for concurrent use, but for warned.
type icsCalendar struct {
	events []icsEvent

	// warned records the events already reported as over a cap (and, as 0, the closing of
	// gaps), so that a copy of a feed logs each once rather than on every request.
	warnMu sync.Mutex
	warned map[int]bool
}

// firstWarnings returns those of nums not yet reported for this copy, and records them.
func (c *icsCalendar) firstWarnings(nums []int) []int {
	c.warnMu.Lock()
	defer c.warnMu.Unlock()
	var fresh []int
	for _, n := range nums {
		if !c.warned[n] {
			if c.warned == nil {
				c.warned = make(map[int]bool)
			}
			c.warned[n] = true
			fresh = append(fresh, n)
		}
	}
	return fresh
}

type icsEvent struct {
	num   int // 1-based position among the feed's VEVENTs, for messages
	start icsTime
	end   *icsTime     // DTEND
	dur   *icsDuration // DURATION
	rules []icsRule
	// rdates are extra occurrences; each with its own end when given as a PERIOD.
	rdates  []icsPeriod
	exdates []icsTime
	// recurrenceID marks an override of one occurrence of the series with the same UID.
	recurrenceID *icsTime
	// master is, for an override, the index of its series' first event without
	// RECURRENCE-ID, or -1.
	master int
	// overridden holds, for a series, the RECURRENCE-IDs of all its overrides.
	overridden []icsTime
	// free is set for cancelled and transparent events.
	free bool
}

// icsTime is a DATE or DATE-TIME value as written: its wall clock, and the zone to read it
// in.
type icsTime struct {
	wall time.Time      // the wall clock, held in UTC fields
	loc  *time.Location // nil for DATE values and floating times: read in the caller's zone
	date bool
}

func (t icsTime) zone(def *time.Location) *time.Location {
	if t.loc != nil {
		return t.loc
	}
	return def
}

func (t icsTime) instant(def *time.Location) time.Time { return icsResolve(t.wall, t.zone(def)) }

// icsDuration is an RFC 5545 duration: days (and weeks) are nominal, so they follow the wall
// clock across daylight-saving changes; hours, minutes and seconds are exact.
type icsDuration struct {
	days  int
	exact time.Duration
}

// icsPeriod is an RDATE value; end or dur is set for a PERIOD.
type icsPeriod struct {
	at  icsTime
	end *icsTime
	dur *icsDuration
}

// icsRule is a parsed RRULE. Its times are wall clocks in UTC fields; UNTIL is fixed up for
// the event's zone when expanded.
type icsRule struct {
	opt rrule.ROption
	// untilUTC: UNTIL was a UTC instant. untilDate: UNTIL was a DATE.
	untilUTC, untilDate bool
}

// icsParse reads a feed into an icsCalendar. probeBudget bounds the time spent on rules that
// never occur.
func icsParse(data []byte, probeBudget time.Duration) (*icsCalendar, error) {
	if len(data) > maxICSBytes {
		return nil, fmt.Errorf("calendar is larger than %d bytes", maxICSBytes)
	}
	if err := icsCheckStructure(data); err != nil {
		return nil, err
	}
	parsed, err := ics.ParseCalendarWithOptions(bytes.NewReader(data),
		ics.WithUnknownPropertyHandler(ics.AcceptUnknownPropertyHandler))
	if err != nil {
		return nil, fmt.Errorf("calendar is malformed: %w", err)
	}
	p := icsParser{zones: make(map[string]*time.Location), probeBudget: probeBudget, began: time.Now()}
	cal := &icsCalendar{}
	series := make(map[string][]int) // UID → indices in cal.events
	for i, ev := range parsed.Events() {
		e, ok, err := p.event(ev, i+1)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if uid := ev.GetProperty(ics.ComponentPropertyUniqueId); uid != nil && uid.Value != "" {
			series[uid.Value] = append(series[uid.Value], len(cal.events))
		}
		cal.events = append(cal.events, e)
	}
	// Link overrides and series by index, so that no UID outlives parsing.
	for _, idx := range series {
		master := -1
		var ids []icsTime
		for _, i := range idx {
			if e := &cal.events[i]; e.recurrenceID != nil {
				ids = append(ids, *e.recurrenceID)
			} else if master < 0 {
				master = i
			}
		}
		for _, i := range idx {
			if e := &cal.events[i]; e.recurrenceID != nil {
				e.master = master
			} else {
				e.overridden = ids
			}
		}
	}
	return cal, nil
}

// icsCheckStructure checks the component nesting before the parser sees it: the parser
// recurses into nested components, and it accepts a calendar that is cut off between two
// components, which would silently lose the rest. Lines are unfolded and recognised as the
// parser does.
func icsCheckStructure(data []byte) error {
	depth, began := 0, false
	check := func(line []byte) error {
		switch token, _ := icsLineToken(line); token {
		case "BEGIN":
			depth++
			began = true
			if depth > maxICSDepth {
				return fmt.Errorf("calendar nests components more than %d deep", maxICSDepth)
			}
		case "END":
			depth--
			if depth < 0 {
				return errors.New("calendar is malformed: END without BEGIN")
			}
		}
		return nil
	}
	var cur, buf []byte // the current logical line; buf holds it when it was folded
	folded := false
	for rest := data; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) > 0 && (line[0] == ' ' || line[0] == '\t') {
			if !folded {
				buf, folded = append(buf[:0], cur...), true
			}
			buf = append(buf, line[1:]...)
			cur = buf
			continue
		}
		if err := check(cur); err != nil {
			return err
		}
		cur, folded = line, false
	}
	if err := check(cur); err != nil {
		return err
	}
	switch {
	case !began:
		return errors.New("not an iCalendar feed (no BEGIN:VCALENDAR)")
	case depth != 0:
		return errors.New("calendar is cut off: a component is not closed")
	}
	return nil
}

// icsLineToken returns the property name of a content line if it is followed by ':' or ';'.
// Like the parser, it skips characters before the first name character.
func icsLineToken(line []byte) (string, bool) {
	isName := func(c byte) bool {
		return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-'
	}
	i := 0
	for i < len(line) && !isName(line[i]) {
		i++
	}
	j := i
	for j < len(line) && isName(line[j]) {
		j++
	}
	if j == i || j >= len(line) || line[j] != ':' && line[j] != ';' {
		return "", false
	}
	return string(line[i:j]), true
}

type icsParser struct {
	zones       map[string]*time.Location
	probeBudget time.Duration
	began       time.Time
}

// event reads the time properties of one VEVENT; ok is false for an event without a start.
func (p *icsParser) event(ev *ics.VEvent, num int) (e icsEvent, ok bool, err error) {
	e = icsEvent{num: num, master: -1}
	fail := func(prop string, format string, args ...any) error {
		return fmt.Errorf("event %d: %s: %s", num, prop, fmt.Sprintf(format, args...))
	}
	if v := ev.GetProperty(ics.ComponentPropertyStatus); v != nil && strings.EqualFold(strings.TrimSpace(v.Value), "CANCELLED") {
		e.free = true
	}
	if v := ev.GetProperty(ics.ComponentPropertyTransp); v != nil && strings.EqualFold(strings.TrimSpace(v.Value), "TRANSPARENT") {
		e.free = true
	}
	if v := ev.GetProperty(ics.ComponentPropertyRecurrenceId); v != nil {
		t, err := p.single(v)
		if err != nil {
			return e, false, fail("RECURRENCE-ID", "%v", err)
		}
		e.recurrenceID = &t
	}
	switch v := ev.GetProperty(ics.ComponentPropertyDtStart); {
	case v != nil:
		if e.start, err = p.single(v); err != nil {
			return e, false, fail("DTSTART", "%v", err)
		}
	case e.recurrenceID != nil:
		e.start = *e.recurrenceID
	default:
		return e, false, nil
	}
	if v := ev.GetProperty(ics.ComponentPropertyDtEnd); v != nil {
		t, err := p.single(v)
		if err != nil {
			return e, false, fail("DTEND", "%v", err)
		}
		e.end = &t
	}
	if v := ev.GetProperty(ics.ComponentPropertyDuration); v != nil && e.end == nil {
		d, ok := icsParseDuration(v.Value)
		if !ok {
			return e, false, fail("DURATION", "not a duration such as PT1H30M or P1D")
		}
		e.dur = &d
	}
	if e.recurrenceID != nil {
		// An override is one occurrence; recurrence properties on it are not expanded.
		return e, true, nil
	}
	for _, v := range ev.GetProperties(ics.ComponentPropertyExdate) {
		ts, err := p.list(v)
		if err != nil {
			return e, false, fail("EXDATE", "%v", err)
		}
		e.exdates = append(e.exdates, ts...)
	}
	for _, v := range ev.GetProperties(ics.ComponentPropertyRdate) {
		ps, err := p.periods(v)
		if err != nil {
			return e, false, fail("RDATE", "%v", err)
		}
		e.rdates = append(e.rdates, ps...)
	}
	for _, v := range ev.GetProperties(ics.ComponentPropertyRrule) {
		r, err := icsParseRule(v.Value, e.start.wall)
		if err != nil {
			return e, false, fail("RRULE", "%v", err)
		}
		occurs, err := icsProbe(r.opt)
		if err != nil {
			return e, false, fail("RRULE", "%v", err)
		}
		if time.Since(p.began) > p.probeBudget {
			return e, false, fail("RRULE", "recurrence rules take more than %v to check", p.probeBudget)
		}
		if occurs {
			e.rules = append(e.rules, r)
		}
	}
	return e, true, nil
}

// single reads a property holding one DATE or DATE-TIME.
func (p *icsParser) single(v *ics.IANAProperty) (icsTime, error) {
	ts, err := p.list(v)
	if err != nil {
		return icsTime{}, err
	}
	if len(ts) != 1 {
		return icsTime{}, errors.New("want exactly one value")
	}
	return ts[0], nil
}

// list reads a property holding a comma-separated list of DATE or DATE-TIME values.
func (p *icsParser) list(v *ics.IANAProperty) ([]icsTime, error) {
	if vt := icsParam(v, "VALUE"); vt != "" && !strings.EqualFold(vt, "DATE") && !strings.EqualFold(vt, "DATE-TIME") {
		return nil, errors.New("VALUE must be DATE or DATE-TIME")
	}
	loc, err := p.zone(icsParam(v, "TZID"))
	if err != nil {
		return nil, err
	}
	var out []icsTime
	for s := range strings.SplitSeq(v.Value, ",") {
		t, ok := icsParseTime(strings.TrimSpace(s), loc)
		if !ok {
			return nil, errors.New("not a DATE or DATE-TIME value")
		}
		out = append(out, t)
	}
	return out, nil
}

// periods reads an RDATE: DATE, DATE-TIME or PERIOD ("start/end" or "start/duration").
func (p *icsParser) periods(v *ics.IANAProperty) ([]icsPeriod, error) {
	if !strings.EqualFold(icsParam(v, "VALUE"), "PERIOD") {
		ts, err := p.list(v)
		if err != nil {
			return nil, err
		}
		out := make([]icsPeriod, len(ts))
		for i, t := range ts {
			out[i] = icsPeriod{at: t}
		}
		return out, nil
	}
	loc, err := p.zone(icsParam(v, "TZID"))
	if err != nil {
		return nil, err
	}
	var out []icsPeriod
	for s := range strings.SplitSeq(v.Value, ",") {
		a, b, ok := strings.Cut(strings.TrimSpace(s), "/")
		start, okA := icsParseTime(a, loc)
		if !ok || !okA || start.date {
			return nil, errors.New("not a PERIOD value (start/end or start/duration)")
		}
		if end, ok := icsParseTime(b, loc); ok && !end.date {
			out = append(out, icsPeriod{at: start, end: &end})
		} else if d, ok := icsParseDuration(b); ok {
			out = append(out, icsPeriod{at: start, dur: &d})
		} else {
			return nil, errors.New("not a PERIOD value (start/end or start/duration)")
		}
	}
	return out, nil
}

// zone resolves a TZID; nil (no TZID, or none that names an IANA zone) means the caller's
// zone.
func (p *icsParser) zone(name string) (*time.Location, error) {
	if name == "" {
		return nil, nil
	}
	if loc, ok := p.zones[name]; ok {
		return loc, nil
	}
	if len(p.zones) >= maxICSZones {
		return nil, fmt.Errorf("calendar uses more than %d time zones", maxICSZones)
	}
	loc := icsLoadZone(name)
	p.zones[name] = loc
	return loc, nil
}

// icsLoadZone finds the IANA zone a TZID names, also behind a path prefix as some
// producers write it ("/mozilla.org/20050126_1/Europe/Berlin"); nil if none.
func icsLoadZone(name string) *time.Location {
	if len(name) > 256 {
		return nil
	}
	for name = strings.TrimSpace(name); ; {
		// "Local" would make the result depend on the machine.
		if name != "" && name != "Local" {
			if loc, err := time.LoadLocation(name); err == nil {
				return loc
			}
		}
		var ok bool
		if _, name, ok = strings.Cut(name, "/"); !ok {
			return nil
		}
	}
}

func icsParam(v *ics.IANAProperty, name string) string {
	if vs := v.ICalParameters[name]; len(vs) > 0 {
		return strings.TrimSpace(vs[0])
	}
	return ""
}

// icsParseTime reads a DATE (20260302), a UTC DATE-TIME (20260302T100000Z), or a DATE-TIME
// in loc (nil: floating). A DATE has no zone, whatever TZID says.
func icsParseTime(s string, loc *time.Location) (icsTime, bool) {
	switch {
	case len(s) == 8:
		t, err := time.Parse("20060102", s)
		return icsTime{wall: t, date: true}, err == nil
	case len(s) == 16 && s[15] == 'Z':
		loc, s = time.UTC, s[:15]
	case len(s) != 15:
		return icsTime{}, false
	}
	t, err := time.Parse("20060102T150405", s)
	return icsTime{wall: t, loc: loc}, err == nil
}

// icsParseDuration reads an RFC 5545 duration: [+|-]P followed by nW, or by nD and/or a
// time part TnHnMnS.
func icsParseDuration(s string) (icsDuration, bool) {
	s = strings.ToUpper(strings.TrimSpace(s))
	sign := 1
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		sign, s = -1, rest
	} else {
		s = strings.TrimPrefix(s, "+")
	}
	s, ok := strings.CutPrefix(s, "P")
	if !ok || s == "" {
		return icsDuration{}, false
	}
	var d icsDuration
	inTime, parts := false, 0
	for s != "" {
		if s[0] == 'T' {
			if inTime || len(s) == 1 {
				return icsDuration{}, false
			}
			inTime, s = true, s[1:]
			continue
		}
		i := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == 0 || i == len(s) || i > 7 {
			return icsDuration{}, false
		}
		n, _ := strconv.Atoi(s[:i])
		switch unit := s[i]; {
		case !inTime && unit == 'W':
			d.days += 7 * n
		case !inTime && unit == 'D':
			d.days += n
		case inTime && unit == 'H':
			d.exact += time.Duration(n) * time.Hour
		case inTime && unit == 'M':
			d.exact += time.Duration(n) * time.Minute
		case inTime && unit == 'S':
			d.exact += time.Duration(n) * time.Second
		default:
			return icsDuration{}, false
		}
		s, parts = s[i+1:], parts+1
	}
	if parts == 0 {
		return icsDuration{}, false
	}
	d.days *= sign
	d.exact *= time.Duration(sign)
	return d, true
}

// icsParseRule reads an RRULE anchored at the wall clock start.
func icsParseRule(value string, start time.Time) (r icsRule, err error) {
	defer func() {
		if recover() != nil {
			r, err = icsRule{}, errors.New("not a valid recurrence rule")
		}
	}()
	value = strings.ToUpper(strings.TrimSpace(value))
	// Wall clocks in UTC fields: rrule-go then steps through days without daylight-saving
	// changes, and each occurrence is placed in the event's zone afterwards.
	opt, err := rrule.StrToROptionInLocation(value, time.UTC)
	if err != nil {
		return icsRule{}, errors.New("not a valid recurrence rule")
	}
	opt.Dtstart = start
	if _, err := rrule.NewRRule(*opt); err != nil {
		return icsRule{}, errors.New("recurrence rule is out of bounds")
	}
	r = icsRule{opt: *opt}
	for part := range strings.SplitSeq(value, ";") {
		if until, ok := strings.CutPrefix(part, "UNTIL="); ok {
			r.untilUTC = strings.HasSuffix(until, "Z")
			r.untilDate = len(until) == 8
		}
	}
	return r, nil
}

// icsProbe reports whether a rule has any occurrence at all. rrule-go looks for the next
// occurrence until the year 9999, which takes up to half a second for a rule that can never
// occur (say, every 30 February); such a rule is found here once per fetch instead of on
// every query, and more cheaply: the Gregorian calendar repeats every 400 years, so moving
// DTSTART by whole multiples of 400 × INTERVAL years keeps every period, weekday and leap
// day, and leaves at most two such cycles to search. (Easter does not repeat so; BYEASTER
// rules are searched in full.)
func icsProbe(opt rrule.ROption) (occurs bool, err error) {
	defer func() {
		if recover() != nil {
			occurs, err = false, errors.New("recurrence rule cannot be expanded")
		}
	}()
	opt.Count, opt.Until = 0, time.Time{}
	if cycle := 400 * max(opt.Interval, 1); len(opt.Byeaster) == 0 {
		if k := (rrule.MAXYEAR - 1 - cycle - opt.Dtstart.Year()) / cycle; k > 0 {
			opt.Dtstart = opt.Dtstart.AddDate(k*cycle, 0, 0)
		}
	}
	r, err := rrule.NewRRule(opt)
	if err != nil {
		return false, errors.New("recurrence rule is out of bounds")
	}
	_, occurs = r.Iterator()()
	return occurs, nil
}

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
