package appointments

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	ics "github.com/arran4/golang-ical"
	"github.com/teambition/rrule-go"
)

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
