package appointments

import (
	"fmt"
	"sync"
	"time"

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
