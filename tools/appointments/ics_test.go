package appointments

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/teambition/rrule-go"
)

func mustZone(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

var newYork = mustZone("America/New_York")

// icsCalendarOf wraps VEVENT bodies (lines separated by \n) in a calendar with CRLF lines;
// an event without a UID gets one of its own.
func icsCalendarOf(events ...string) []byte {
	var b strings.Builder
	b.WriteString("BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//sitetools//test//EN\n")
	for i, e := range events {
		b.WriteString("BEGIN:VEVENT\nDTSTAMP:20260101T000000Z\n")
		if !strings.Contains(e, "UID:") {
			fmt.Fprintf(&b, "UID:event-%d@test\n", i)
		}
		b.WriteString(strings.TrimSpace(e) + "\nEND:VEVENT\n")
	}
	b.WriteString("END:VCALENDAR\n")
	return []byte(strings.ReplaceAll(b.String(), "\n", "\r\n"))
}

// showIntervals renders intervals as "start/end" in RFC 3339 with offsets, for diffs that
// show the zone as well as the instant.
func showIntervals(ivs []Interval) []string {
	out := make([]string, len(ivs))
	for i, iv := range ivs {
		out[i] = iv.Start.Format(time.RFC3339) + "/" + iv.End.Format(time.RFC3339)
	}
	return out
}

func TestParseICSBusyFixtures(t *testing.T) {
	for _, tt := range []struct {
		name     string
		file     string
		from, to time.Time
		loc      *time.Location
		want     []Interval
	}{{
		name: "weekly rule with EXDATEs, an RDATE, a moved and a cancelled override, across DST",
		file: "recurring.ics",
		from: local("2026-03-01 00:00"), to: local("2026-05-01 00:00"), loc: berlin,
		want: []Interval{
			busyLocal("2026-03-02 10:00", "2026-03-02 11:00"),
			busyLocal("2026-03-04 15:00", "2026-03-04 16:00"), // RDATE
			// 9 March: EXDATE. 16 March: moved to Tuesday 17 March. 23 March: cancelled.
			busyLocal("2026-03-17 14:00", "2026-03-17 15:30"),
			busyLocal("2026-03-30 10:00", "2026-03-30 11:00"), // summer time, same wall clock
			busyLocal("2026-04-06 10:00", "2026-04-06 11:00"),
			// 13 and 20 April: one EXDATE with a comma list. 27 April: UNTIL, inclusive.
			busyLocal("2026-04-27 10:00", "2026-04-27 11:00"),
		},
	}, {
		name: "the day an occurrence was moved away from is free",
		file: "recurring.ics",
		from: local("2026-03-16 00:00"), to: local("2026-03-17 00:00"), loc: berlin,
		want: []Interval{},
	}, {
		name: "an override counts where it moved to, though its original time is outside the window",
		file: "recurring.ics",
		from: local("2026-03-17 00:00"), to: local("2026-03-18 00:00"), loc: berlin,
		want: []Interval{busyLocal("2026-03-17 14:00", "2026-03-17 15:30")},
	}, {
		name: "an interval that overlaps the window is returned whole",
		file: "recurring.ics",
		from: local("2026-03-30 10:30"), to: local("2026-03-30 10:45"), loc: berlin,
		want: []Interval{busyLocal("2026-03-30 10:00", "2026-03-30 11:00")},
	}, {
		name: "spring change: daily keeps 09:00, night event spans it, a start in the gap moves forward",
		file: "dst.ics",
		from: local("2026-03-26 00:00"), to: local("2026-04-01 00:00"), loc: berlin,
		want: []Interval{
			{at("2026-03-27T09:00+01:00"), at("2026-03-27T09:15+01:00")},
			{at("2026-03-27T14:00+01:00"), at("2026-03-27T15:00+01:00")}, // 09:00 in New York
			{at("2026-03-28T09:00+01:00"), at("2026-03-28T09:15+01:00")},
			{at("2026-03-29T00:30+01:00"), at("2026-03-29T03:00+02:00")}, // 1½ hours
			// 02:30 does not exist; read with the offset before the gap, it is 03:30 CEST.
			{at("2026-03-29T03:30+02:00"), at("2026-03-29T04:30+02:00")},
			{at("2026-03-29T09:00+02:00"), at("2026-03-29T09:15+02:00")},
			{at("2026-03-30T09:00+02:00"), at("2026-03-30T09:15+02:00")},
			{at("2026-03-31T09:00+02:00"), at("2026-03-31T09:15+02:00")},
		},
	}, {
		name: "autumn change: a repeated wall time means its first occurrence; weekly keeps 18:00",
		file: "dst.ics",
		from: local("2026-10-17 00:00"), to: local("2026-10-31 00:00"), loc: berlin,
		want: []Interval{
			{at("2026-10-18T18:00+02:00"), at("2026-10-18T19:00+02:00")},
			{at("2026-10-25T02:30+02:00"), at("2026-10-25T02:00+01:00")},
			{at("2026-10-25T18:00+01:00"), at("2026-10-25T19:00+01:00")},
		},
	}, {
		name: "all-day events are whole days in the schedule's zone; transparent birthdays are free",
		file: "allday.ics",
		from: local("2026-03-27 00:00"), to: local("2026-05-31 00:00"), loc: berlin,
		want: []Interval{
			{at("2026-03-28T00:00+01:00"), at("2026-03-30T00:00+02:00")}, // 47 hours
			busyLocal("2026-04-06 00:00", "2026-04-07 00:00"),
			busyLocal("2026-04-15 00:00", "2026-04-18 00:00"),
			busyLocal("2026-04-22 00:00", "2026-04-23 00:00"), // no DTEND: one day
			busyLocal("2026-05-01 00:00", "2026-05-02 00:00"), // 8 May: EXDATE
			busyLocal("2026-05-15 00:00", "2026-05-16 00:00"),
		},
	}, {
		name: "all-day events follow the zone they are asked in",
		file: "allday.ics",
		from: at("2026-04-01T00:00-04:00"), to: at("2026-04-30T00:00-04:00"), loc: newYork,
		want: []Interval{
			{at("2026-04-06T00:00-04:00"), at("2026-04-07T00:00-04:00")},
			{at("2026-04-15T00:00-04:00"), at("2026-04-18T00:00-04:00")},
			{at("2026-04-22T00:00-04:00"), at("2026-04-23T00:00-04:00")},
		},
	}, {
		name: "UTC, floating, DURATION, tentative, unknown TZID, RDATE periods; free, cancelled and point events left out",
		file: "misc.ics",
		from: local("2026-03-09 00:00"), to: local("2026-03-16 00:00"), loc: berlin,
		want: []Interval{
			busyLocal("2026-03-10 14:00", "2026-03-10 15:00"), // 13:00Z
			busyLocal("2026-03-11 09:00", "2026-03-11 10:00"), // floating
			busyLocal("2026-03-12 16:00", "2026-03-12 17:30"), // DURATION:PT1H30M
			busyLocal("2026-03-13 09:00", "2026-03-13 10:00"), // TZID=Mars/Olympus_Mons
			busyLocal("2026-03-13 11:00", "2026-03-13 11:30"), // tentative
			busyLocal("2026-03-14 09:00", "2026-03-14 09:30"), // DTSTART of the RDATE event
			busyLocal("2026-03-15 11:00", "2026-03-15 13:00"), // PERIOD start/duration
			busyLocal("2026-03-15 16:00", "2026-03-15 16:15"), // PERIOD start/end
		},
	}, {
		name: "floating times and unknown zones are read in the zone asked for",
		file: "misc.ics",
		from: local("2026-03-11 00:00"), to: local("2026-03-14 00:00"), loc: time.UTC,
		want: []Interval{
			{at("2026-03-11T09:00Z"), at("2026-03-11T10:00Z")},
			{at("2026-03-12T15:00Z"), at("2026-03-12T16:30Z")},
			// Mars/Olympus_Mons 09:00-10:00 now in UTC, touching the tentative 11:00 CET.
			{at("2026-03-13T09:00Z"), at("2026-03-13T10:30Z")},
		},
	}, {
		name: "a nominal day of DURATION follows the wall clock: 25 hours across the autumn change",
		file: "misc.ics",
		from: local("2026-10-20 00:00"), to: local("2026-10-31 00:00"), loc: berlin,
		want: []Interval{{at("2026-10-24T12:00+02:00"), at("2026-10-25T12:00+01:00")}},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "ics", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseICSBusy(data, tt.from, tt.to, tt.loc)
			if err != nil {
				t.Fatalf("ParseICSBusy: %v", err)
			}
			if diff := cmp.Diff(showIntervals(tt.want), showIntervals(got)); diff != "" {
				t.Errorf("busy (-want +got):\n%s", diff)
			}
			for _, iv := range got {
				if iv.Start.Location() != tt.loc || iv.End.Location() != tt.loc {
					t.Errorf("interval %v not in %v", iv, tt.loc)
				}
			}
		})
	}
}

func TestParseICSBusyRules(t *testing.T) {
	march := func(day, hhmm string) time.Time { return local("2026-03-" + day + " " + hhmm) }
	for _, tt := range []struct {
		name     string
		events   []string
		from, to time.Time
		loc      *time.Location
		want     []Interval
	}{{
		name: "a DATE EXDATE removes that day's occurrence of a timed event",
		events: []string{`
DTSTART;TZID=Europe/Berlin:20260302T090000
DTEND;TZID=Europe/Berlin:20260302T093000
RRULE:FREQ=DAILY;COUNT=3
EXDATE;VALUE=DATE:20260303`},
		from: march("01", "00:00"), to: march("31", "00:00"), loc: berlin,
		want: []Interval{
			busyLocal("2026-03-02 09:00", "2026-03-02 09:30"),
			busyLocal("2026-03-04 09:00", "2026-03-04 09:30"),
		},
	}, {
		name: "a UTC EXDATE removes the occurrence at that instant",
		events: []string{`
DTSTART;TZID=Europe/Berlin:20260302T090000
DTEND;TZID=Europe/Berlin:20260302T093000
RRULE:FREQ=DAILY;COUNT=3
EXDATE:20260303T080000Z`},
		from: march("01", "00:00"), to: march("31", "00:00"), loc: berlin,
		want: []Interval{
			busyLocal("2026-03-02 09:00", "2026-03-02 09:30"),
			busyLocal("2026-03-04 09:00", "2026-03-04 09:30"),
		},
	}, {
		name: "an EXDATE can remove DTSTART itself",
		events: []string{`
DTSTART:20260302T090000Z
DTEND:20260302T100000Z
RRULE:FREQ=DAILY;COUNT=2
EXDATE:20260302T090000Z`},
		from: march("01", "00:00"), to: march("31", "00:00"), loc: time.UTC,
		want: []Interval{{at("2026-03-03T09:00Z"), at("2026-03-03T10:00Z")}},
	}, {
		name: "an override without DTEND keeps the length of its series",
		events: []string{`
UID:series@test
DTSTART;TZID=Europe/Berlin:20260302T100000
DTEND;TZID=Europe/Berlin:20260302T113000
RRULE:FREQ=WEEKLY;COUNT=2`, `
UID:series@test
RECURRENCE-ID;TZID=Europe/Berlin:20260309T100000
DTSTART;TZID=Europe/Berlin:20260310T080000`},
		from: march("01", "00:00"), to: march("31", "00:00"), loc: berlin,
		want: []Interval{
			busyLocal("2026-03-02 10:00", "2026-03-02 11:30"),
			busyLocal("2026-03-10 08:00", "2026-03-10 09:30"),
		},
	}, {
		name: "an override matches by instant, whatever zone its RECURRENCE-ID is written in",
		events: []string{`
UID:series@test
DTSTART;TZID=Europe/Berlin:20260302T100000
DTEND;TZID=Europe/Berlin:20260302T110000
RRULE:FREQ=WEEKLY;COUNT=2`, `
UID:series@test
RECURRENCE-ID:20260309T090000Z
DTSTART:20260309T150000Z
DTEND:20260309T160000Z`},
		from: march("01", "00:00"), to: march("31", "00:00"), loc: berlin,
		want: []Interval{
			busyLocal("2026-03-02 10:00", "2026-03-02 11:00"),
			busyLocal("2026-03-09 16:00", "2026-03-09 17:00"),
		},
	}, {
		name: "a transparent override frees its occurrence; an opaque override of a free series is busy",
		events: []string{`
UID:busy-series@test
DTSTART;TZID=Europe/Berlin:20260302T100000
DTEND;TZID=Europe/Berlin:20260302T110000
RRULE:FREQ=WEEKLY;COUNT=2`, `
UID:busy-series@test
RECURRENCE-ID;TZID=Europe/Berlin:20260302T100000
DTSTART;TZID=Europe/Berlin:20260302T100000
DTEND;TZID=Europe/Berlin:20260302T110000
TRANSP:TRANSPARENT`, `
UID:free-series@test
DTSTART;TZID=Europe/Berlin:20260303T100000
DTEND;TZID=Europe/Berlin:20260303T110000
RRULE:FREQ=WEEKLY;COUNT=2
TRANSP:TRANSPARENT`, `
UID:free-series@test
RECURRENCE-ID;TZID=Europe/Berlin:20260310T100000
DTSTART;TZID=Europe/Berlin:20260310T120000
DTEND;TZID=Europe/Berlin:20260310T130000`},
		from: march("01", "00:00"), to: march("31", "00:00"), loc: berlin,
		want: []Interval{
			busyLocal("2026-03-09 10:00", "2026-03-09 11:00"),
			busyLocal("2026-03-10 12:00", "2026-03-10 13:00"),
		},
	}, {
		name: "an all-day event that ends on its own date lasts that day",
		events: []string{`
DTSTART;VALUE=DATE:20260305
DTEND;VALUE=DATE:20260305`},
		from: march("01", "00:00"), to: march("31", "00:00"), loc: berlin,
		want: []Interval{busyLocal("2026-03-05 00:00", "2026-03-06 00:00")},
	}, {
		name: "a DATE RECURRENCE-ID moves a day of an all-day series",
		events: []string{`
UID:days@test
DTSTART;VALUE=DATE:20260302
RRULE:FREQ=WEEKLY;COUNT=3`, `
UID:days@test
RECURRENCE-ID;VALUE=DATE:20260309
DTSTART;VALUE=DATE:20260311`},
		from: march("01", "00:00"), to: march("31", "00:00"), loc: berlin,
		want: []Interval{
			busyLocal("2026-03-02 00:00", "2026-03-03 00:00"),
			busyLocal("2026-03-11 00:00", "2026-03-12 00:00"),
			busyLocal("2026-03-16 00:00", "2026-03-17 00:00"),
		},
	}, {
		name: "an override without its series is an event of its own",
		events: []string{`
UID:orphan@test
RECURRENCE-ID;TZID=Europe/Berlin:20260309T100000
DTSTART;TZID=Europe/Berlin:20260309T140000
DTEND;TZID=Europe/Berlin:20260309T150000`},
		from: march("01", "00:00"), to: march("31", "00:00"), loc: berlin,
		want: []Interval{busyLocal("2026-03-09 14:00", "2026-03-09 15:00")},
	}, {
		name: "several RRULEs add up",
		events: []string{`
DTSTART;TZID=Europe/Berlin:20260302T080000
DTEND;TZID=Europe/Berlin:20260302T083000
RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=2
RRULE:FREQ=WEEKLY;BYDAY=WE;COUNT=2`},
		from: march("01", "00:00"), to: march("31", "00:00"), loc: berlin,
		want: []Interval{
			busyLocal("2026-03-02 08:00", "2026-03-02 08:30"),
			busyLocal("2026-03-04 08:00", "2026-03-04 08:30"),
			busyLocal("2026-03-09 08:00", "2026-03-09 08:30"),
			busyLocal("2026-03-11 08:00", "2026-03-11 08:30"),
		},
	}, {
		name: "a DATE UNTIL of a timed event includes that whole day",
		events: []string{`
DTSTART;TZID=Europe/Berlin:20260302T170000
DTEND;TZID=Europe/Berlin:20260302T173000
RRULE:FREQ=DAILY;UNTIL=20260303`},
		from: march("01", "00:00"), to: march("31", "00:00"), loc: berlin,
		want: []Interval{
			busyLocal("2026-03-02 17:00", "2026-03-02 17:30"),
			busyLocal("2026-03-03 17:00", "2026-03-03 17:30"),
		},
	}, {
		name: "a UTC UNTIL is an instant, inclusive",
		events: []string{`
DTSTART;TZID=Europe/Berlin:20260302T090000
DTEND;TZID=Europe/Berlin:20260302T093000
RRULE:FREQ=DAILY;UNTIL=20260303T080000Z`},
		from: march("01", "00:00"), to: march("31", "00:00"), loc: berlin,
		want: []Interval{
			busyLocal("2026-03-02 09:00", "2026-03-02 09:30"),
			busyLocal("2026-03-03 09:00", "2026-03-03 09:30"),
		},
	}, {
		name: "a daily series begun in 1990 costs no more than a new one",
		events: []string{`
DTSTART;TZID=Europe/Berlin:19900101T070000
DTEND;TZID=Europe/Berlin:19900101T073000
RRULE:FREQ=DAILY`},
		from: march("02", "00:00"), to: march("04", "00:00"), loc: berlin,
		want: []Interval{
			busyLocal("2026-03-02 07:00", "2026-03-02 07:30"),
			busyLocal("2026-03-03 07:00", "2026-03-03 07:30"),
		},
	}, {
		name: "a series that ended before the window has no time in it",
		events: []string{`
DTSTART;TZID=Europe/Berlin:20100104T070000
DTEND;TZID=Europe/Berlin:20100104T073000
RRULE:FREQ=DAILY;UNTIL=20200101T000000Z`},
		from: march("02", "00:00"), to: march("04", "00:00"), loc: berlin,
		want: []Interval{},
	}, {
		name: "a rule that can never occur leaves DTSTART",
		events: []string{`
DTSTART;TZID=Europe/Berlin:20260302T090000
DTEND;TZID=Europe/Berlin:20260302T100000
RRULE:FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30`},
		from: march("01", "00:00"), to: local("2027-03-31 00:00"), loc: berlin,
		want: []Interval{busyLocal("2026-03-02 09:00", "2026-03-02 10:00")},
	}, {
		name: "overlapping and touching events merge; an event without DTSTART takes no time",
		events: []string{`
DTSTART:20260302T090000Z
DTEND:20260302T100000Z`, `
DTSTART:20260302T093000Z
DTEND:20260302T103000Z`, `
DTSTART:20260302T103000Z
DTEND:20260302T110000Z`, `
DTEND:20260302T150000Z
SUMMARY:no start`},
		from: march("01", "00:00"), to: march("31", "00:00"), loc: time.UTC,
		want: []Interval{{at("2026-03-02T09:00Z"), at("2026-03-02T11:00Z")}},
	}, {
		name: "DTEND before DTSTART is read with its ends swapped",
		events: []string{`
DTSTART:20260302T100000Z
DTEND:20260302T090000Z`},
		from: march("01", "00:00"), to: march("31", "00:00"), loc: time.UTC,
		want: []Interval{{at("2026-03-02T09:00Z"), at("2026-03-02T10:00Z")}},
	}, {
		name:   "lower-case rule parts and folded lines are read",
		events: []string{"DTSTART;TZID=Europe/Be\n rlin:20260302T090000\nDURATION:PT\n\t45M\nRRULE:freq=daily;count=2"},
		from:   march("01", "00:00"), to: march("31", "00:00"), loc: berlin,
		want: []Interval{
			busyLocal("2026-03-02 09:00", "2026-03-02 09:45"),
			busyLocal("2026-03-03 09:00", "2026-03-03 09:45"),
		},
	}, {
		name: "a nil zone means UTC",
		events: []string{`
DTSTART:20260302T090000
DTEND:20260302T100000`},
		from: march("01", "00:00"), to: march("31", "00:00"), loc: nil,
		want: []Interval{{at("2026-03-02T09:00Z"), at("2026-03-02T10:00Z")}},
	}, {
		name: "an empty window has no busy time",
		events: []string{`
DTSTART:20260302T090000Z
DTEND:20260302T100000Z`},
		from: at("2026-03-02T09:30Z"), to: at("2026-03-02T09:30Z"), loc: time.UTC,
		want: []Interval{},
	}, {
		name: "an interval that ends where the window starts is outside it",
		events: []string{`
DTSTART:20260302T090000Z
DTEND:20260302T100000Z`},
		from: at("2026-03-02T10:00Z"), to: at("2026-03-02T12:00Z"), loc: time.UTC,
		want: []Interval{},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseICSBusy(icsCalendarOf(tt.events...), tt.from, tt.to, tt.loc)
			if err != nil {
				t.Fatalf("ParseICSBusy: %v", err)
			}
			if got == nil {
				t.Error("got nil; want a non-nil slice")
			}
			if diff := cmp.Diff(showIntervals(tt.want), showIntervals(got)); diff != "" {
				t.Errorf("busy (-want +got):\n%s", diff)
			}
		})
	}
}

// TestICSSkipAheadMatchesFullExpansion checks that skipping whole periods before the window
// changes nothing: each rule, begun long ago, is expanded by rrule-go from its DTSTART as
// the reference.
func TestICSSkipAheadMatchesFullExpansion(t *testing.T) {
	from, to := local("2026-03-01 00:00"), local("2026-05-01 00:00")
	for _, tt := range []struct {
		rule, dtstart string // dtstart: Berlin wall clock
		empty         bool
	}{
		{rule: "FREQ=DAILY;INTERVAL=3", dtstart: "20030514T093000"},
		{rule: "FREQ=DAILY;BYHOUR=8,17;BYMINUTE=0,45", dtstart: "20030514T093000"},
		{rule: "FREQ=WEEKLY;INTERVAL=2;BYDAY=TU,TH;WKST=SU", dtstart: "20030514T093000"},
		{rule: "FREQ=WEEKLY;INTERVAL=3", dtstart: "20030514T093000"},
		{rule: "FREQ=WEEKLY;INTERVAL=2;BYDAY=SU,MO;WKST=MO", dtstart: "20030518T093000"},
		{rule: "FREQ=MONTHLY;BYDAY=-1FR", dtstart: "20030514T093000"},
		{rule: "FREQ=MONTHLY;INTERVAL=5;BYSETPOS=2;BYDAY=MO,TU,WE,TH,FR", dtstart: "20030514T093000"},
		{rule: "FREQ=MONTHLY;BYMONTHDAY=31", dtstart: "20030514T093000"},
		{rule: "FREQ=MONTHLY;INTERVAL=11", dtstart: "20030514T093000"},
		{rule: "FREQ=YEARLY;BYWEEKNO=14;BYDAY=MO", dtstart: "20030514T093000"},
		{rule: "FREQ=YEARLY;INTERVAL=23;BYMONTH=3,4", dtstart: "20030514T093000"},
		{rule: "FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU;BYHOUR=2;BYMINUTE=30", dtstart: "20030330T023000"},
		{rule: "FREQ=HOURLY;INTERVAL=7", dtstart: "20030514T093000"},
		{rule: "FREQ=MINUTELY;INTERVAL=997", dtstart: "20030514T093000"},
		{rule: "FREQ=DAILY;UNTIL=20260315T000000Z", dtstart: "20030514T093000"},
		{rule: "FREQ=WEEKLY;BYDAY=MO;UNTIL=20100101T000000Z", dtstart: "20030514T093000", empty: true},
	} {
		t.Run(tt.rule, func(t *testing.T) {
			data := icsCalendarOf("DTSTART;TZID=Europe/Berlin:" + tt.dtstart + "\nDURATION:PT1M\nRRULE:" + tt.rule)
			got, err := ParseICSBusy(data, from, to, berlin)
			if err != nil {
				t.Fatalf("ParseICSBusy: %v", err)
			}

			opt, err := rrule.StrToROptionInLocation(tt.rule, berlin)
			if err != nil {
				t.Fatal(err)
			}
			opt.Dtstart, err = time.ParseInLocation("20060102T150405", tt.dtstart, berlin)
			if err != nil {
				t.Fatal(err)
			}
			// The reference runs in the zone itself, where time.Date moves a wall time in the
			// spring gap forward as RFC 5545 does for this zone.
			r, err := rrule.NewRRule(*opt)
			if err != nil {
				t.Fatal(err)
			}
			want := []Interval{}
			for _, s := range r.Between(from.Add(-time.Minute), to, false) {
				if !s.Before(to) {
					continue
				}
				want = append(want, Interval{s, s.Add(time.Minute)})
			}
			if len(want) == 0 != tt.empty {
				t.Fatalf("reference has %d occurrences; the case expects empty=%v", len(want), tt.empty)
			}
			if diff := cmp.Diff(showIntervals(want), showIntervals(got)); diff != "" {
				t.Errorf("busy (-full expansion +skipped ahead):\n%s", diff)
			}
		})
	}
}

func TestICSResolve(t *testing.T) {
	lordHowe := mustZone("Australia/Lord_Howe")
	for _, tt := range []struct {
		name string
		wall string
		loc  *time.Location
		want time.Time
	}{
		{"ordinary time", "2026-03-29T10:00:00", berlin, at("2026-03-29T10:00+02:00")},
		{"just before the spring gap", "2026-03-29T01:59:00", berlin, at("2026-03-29T01:59+01:00")},
		{"in the spring gap, east of UTC", "2026-03-29T02:30:00", berlin, at("2026-03-29T03:30+02:00")},
		{"in the spring gap, west of UTC", "2026-03-08T02:30:00", newYork, at("2026-03-08T03:30-04:00")},
		{"in a half-hour gap", "2026-10-04T02:15:00", lordHowe, at("2026-10-04T02:45+11:00")},
		{"repeated hour, east of UTC", "2026-10-25T02:30:00", berlin, at("2026-10-25T02:30+02:00")},
		{"repeated hour, west of UTC", "2026-11-01T01:30:00", newYork, at("2026-11-01T01:30-04:00")},
		{"just after the repeated hour", "2026-10-25T03:00:00", berlin, at("2026-10-25T03:00+01:00")},
		{"UTC", "2026-03-29T02:30:00", time.UTC, at("2026-03-29T02:30Z")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wall, err := time.Parse("2006-01-02T15:04:05", tt.wall)
			if err != nil {
				t.Fatal(err)
			}
			if got := icsResolve(wall, tt.loc); !got.Equal(tt.want) {
				t.Errorf("icsResolve(%s, %v) = %v; want %v", tt.wall, tt.loc, got, tt.want)
			}
		})
	}
}

func TestParseICSBusyErrors(t *testing.T) {
	const marker = "SECRET-MARKER-7731"
	event := func(lines string) []byte {
		return icsCalendarOf("SUMMARY:" + marker + "\nATTENDEE:mailto:" + marker + "@example.com\n" + lines)
	}
	// many repeats an event n times; each gets its own UID.
	many := func(n int, lines func(i int) string) []byte {
		events := make([]string, n)
		for i := range events {
			events[i] = lines(i)
		}
		return icsCalendarOf(events...)
	}
	nested := func(prefix string) []byte {
		var b bytes.Buffer
		b.WriteString("BEGIN:VCALENDAR\r\n")
		for range 20 {
			b.WriteString(prefix + "BEGIN:X-DEEP\r\n")
		}
		for range 20 {
			b.WriteString("END:X-DEEP\r\n")
		}
		b.WriteString("END:VCALENDAR\r\n")
		return b.Bytes()
	}
	from, to := local("2026-03-02 00:00"), local("2026-03-10 00:00")

	for _, tt := range []struct {
		name string
		data []byte
		want string
	}{
		{"over 5 MB", append(icsCalendarOf("DTSTART:20260302T090000Z"), bytes.Repeat([]byte(" "), maxICSBytes)...), "larger than 5242880 bytes"},
		{"not a calendar", []byte("<html>sign in</html>"), "not an iCalendar feed"},
		{"cut off between events", bytes.TrimSuffix(icsCalendarOf("DTSTART:20260302T090000Z", "DTSTART:20260303T090000Z"), []byte("END:VCALENDAR\r\n")), "cut off"},
		{"cut off inside an event", []byte("BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nDTSTART:20260302T090000Z\r\n"), "cut off"},
		{"nested too deep", nested(""), "nests components more than 8 deep"},
		{"nested too deep behind characters the parser skips", nested(";"), "nests components more than 8 deep"},
		{"malformed DTSTART", event("DTSTART:2026-03-02T09:00:00"), "event 1: DTSTART: not a DATE or DATE-TIME value"},
		{"two values in DTSTART", event("DTSTART:20260302T090000Z,20260303T090000Z"), "event 1: DTSTART: want exactly one value"},
		{"a PERIOD where a date is due", event("DTSTART;VALUE=PERIOD:20260302T090000Z/PT1H"), "event 1: DTSTART: VALUE must be DATE or DATE-TIME"},
		{"malformed DTEND", event("DTSTART:20260302T090000Z\nDTEND:tomorrow"), "event 1: DTEND"},
		{"malformed DURATION", event("DTSTART:20260302T090000Z\nDURATION:PT1X"), "event 1: DURATION"},
		{"malformed RRULE", event("DTSTART:20260302T090000Z\nRRULE:FREQ=FORTNIGHTLY"), "event 1: RRULE: not a valid recurrence rule"},
		{"RRULE out of bounds", event("DTSTART:20260302T090000Z\nRRULE:FREQ=MONTHLY;BYMONTHDAY=32"), "event 1: RRULE: recurrence rule is out of bounds"},
		{"malformed EXDATE", event("DTSTART:20260302T090000Z\nRRULE:FREQ=DAILY\nEXDATE:20260303T090000Z,soon"), "event 1: EXDATE"},
		{"malformed RDATE period", event("DTSTART:20260302T090000Z\nRDATE;VALUE=PERIOD:20260303T090000Z"), "event 1: RDATE"},
		{"malformed RECURRENCE-ID", event("DTSTART:20260302T090000Z\nRECURRENCE-ID:yesterday"), "event 1: RECURRENCE-ID"},
		{"too many time zones", many(maxICSZones+1, func(i int) string {
			return fmt.Sprintf("DTSTART;TZID=Zone-%d:20260302T090000", i)
		}), "more than 64 time zones"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseICSBusy(tt.data, from, to, berlin)
			if err == nil {
				t.Fatalf("ParseICSBusy = %v, nil; want an error containing %q", got, tt.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.want) {
				t.Errorf("error %q does not contain %q", msg, tt.want)
			}
			for _, leak := range []string{marker, "2026-03-02T09:00:00", "tomorrow", "soon", "yesterday", "FORTNIGHTLY"} {
				if strings.Contains(msg, leak) {
					t.Errorf("error %q shows event content %q", msg, leak)
				}
			}
		})
	}
}

// TestICSOverCapFailsClosed: an event that goes over an expansion cap makes its own span
// busy, and only that; the feed's other events keep their exact times.
func TestICSOverCapFailsClosed(t *testing.T) {
	const meeting = "DTSTART:20260303T090000Z\nDTEND:20260303T100000Z"
	meetingBusy := Interval{at("2026-03-03T10:00+01:00"), at("2026-03-03T11:00+01:00")}
	// many repeats an event n times at hour offsets from 2026-03-03 00:00Z.
	many := func(n int, rule string) []string {
		events := make([]string, n)
		for i := range events {
			events[i] = fmt.Sprintf("DTSTART:20260303T%02d0000Z\n%s", i*3, rule)
		}
		return events
	}
	from, to := local("2026-03-02 00:00"), local("2026-03-10 00:00")
	for _, tt := range []struct {
		name      string
		events    []string
		want      []Interval
		overCap   []int
		coarsened bool
	}{{
		name:    "an endless secondly invitation is busy from its start to the window's end",
		events:  []string{meeting, "DTSTART:20260305T080000Z\nDURATION:PT1S\nRRULE:FREQ=SECONDLY"},
		want:    []Interval{meetingBusy, {at("2026-03-05T09:00+01:00"), to}},
		overCap: []int{2},
	}, {
		name:    "one with UNTIL is busy up to the end of its last occurrence",
		events:  []string{"DTSTART:20260304T080000Z\nDURATION:PT1S\nRRULE:FREQ=SECONDLY;UNTIL=20260304T120000Z", meeting},
		want:    []Interval{meetingBusy, {at("2026-03-04T09:00+01:00"), time.Date(2026, 3, 4, 12, 0, 1, 0, time.UTC).In(berlin)}},
		overCap: []int{1},
	}, {
		name:    "one with COUNT is busy up to the end of its last occurrence",
		events:  []string{meeting, "DTSTART:20260306T080000Z\nDURATION:PT30S\nRRULE:FREQ=SECONDLY;COUNT=20000"},
		want:    []Interval{meetingBusy, {at("2026-03-06T09:00+01:00"), time.Date(2026, 3, 6, 13, 33, 49, 0, time.UTC).In(berlin)}},
		overCap: []int{2},
	}, {
		name:    "one begun before the window is busy from the window's start",
		events:  []string{"DTSTART:20260201T000000Z\nDURATION:PT1S\nRRULE:FREQ=SECONDLY;INTERVAL=2;BYHOUR=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23", meeting},
		want:    []Interval{{from, to}},
		overCap: []int{1},
	}, {
		// Events 1 to 10 use 95 000 of the 100 000 occurrences; 11 goes over at 5 000, and is
		// busy over a span that ends before the window. Then 12, a single event, keeps its
		// time, and 13, a series, is busy over its whole span.
		name: "after the feed's budget is spent, each series is busy over its span",
		events: append(slices.Repeat([]string{"DTSTART:20260101T000000Z\nDURATION:PT1M\nRRULE:FREQ=MINUTELY;COUNT=9500"}, 11),
			meeting, "DTSTART:20260304T090000Z\nDTEND:20260304T093000Z\nRRULE:FREQ=DAILY;COUNT=2"),
		want:    []Interval{meetingBusy, {at("2026-03-04T10:00+01:00"), at("2026-03-05T10:30+01:00")}},
		overCap: []int{11, 13},
	}, {
		// 54 000 two-second steps, of which 36 000 distinct: over the cap, and more than half
		// of it after merging.
		name:      "too many busy intervals close gaps no appointment fits in",
		events:    append(many(6, "DURATION:PT1S\nRRULE:FREQ=SECONDLY;INTERVAL=2;COUNT=9000"), "DTSTART:20260308T090000Z\nDTEND:20260308T100000Z"),
		coarsened: true,
		want: []Interval{
			{at("2026-03-03T01:00+01:00"), time.Date(2026, 3, 3, 19, 59, 59, 0, time.UTC).In(berlin)},
			{at("2026-03-08T10:00+01:00"), at("2026-03-08T11:00+01:00")},
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			cal, err := icsParse(icsCalendarOf(tt.events...), maxICSRuleProbe)
			if err != nil {
				t.Fatal(err)
			}
			got := cal.busy(from, to, berlin)
			if diff := cmp.Diff(showIntervals(tt.want), showIntervals(got.intervals)); diff != "" {
				t.Errorf("busy (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.overCap, got.overCap); diff != "" {
				t.Errorf("events over the cap (-want +got):\n%s", diff)
			}
			if got.coarsened != tt.coarsened {
				t.Errorf("coarsened = %v; want %v", got.coarsened, tt.coarsened)
			}
		})
	}
}

func TestICSProbe(t *testing.T) {
	for _, tt := range []struct {
		rule, dtstart string
		occurs        bool
	}{
		{"FREQ=WEEKLY;BYDAY=MO", "20260302T100000", true},
		{"FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29", "20260302T100000", true},
		{"FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO", "20260302T100000", true}, // 2044
		{"FREQ=YEARLY;INTERVAL=4;BYMONTH=2;BYMONTHDAY=29", "20240101T100000", true},
		{"FREQ=YEARLY;INTERVAL=4;BYMONTH=2;BYMONTHDAY=29", "20250101T100000", false}, // never a leap year
		{"FREQ=YEARLY;INTERVAL=400;BYMONTH=2;BYMONTHDAY=29", "20260101T100000", false},
		{"FREQ=YEARLY;INTERVAL=3;BYMONTH=2;BYMONTHDAY=29", "20250101T100000", true},   // 2028
		{"FREQ=YEARLY;INTERVAL=100;BYMONTH=2;BYMONTHDAY=29", "18000101T100000", true}, // 2000
		{"FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30", "20260302T100000", false},
		{"FREQ=MONTHLY;BYMONTH=4;BYMONTHDAY=31", "20260302T100000", false},
		{"FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30", "20260302T100000", false},
		{"FREQ=MINUTELY;BYMONTH=2;BYMONTHDAY=30", "20260302T100000", false},
		{"FREQ=MONTHLY;BYDAY=MO;BYSETPOS=6", "20260302T100000", false},
		{"FREQ=YEARLY;BYWEEKNO=53;BYDAY=TH", "20260302T100000", true},
	} {
		t.Run(tt.rule+" from "+tt.dtstart, func(t *testing.T) {
			start, err := time.Parse("20060102T150405", tt.dtstart)
			if err != nil {
				t.Fatal(err)
			}
			r, err := icsParseRule(tt.rule, start)
			if err != nil {
				t.Fatal(err)
			}
			occurs, err := icsProbe(r.opt)
			if err != nil || occurs != tt.occurs {
				t.Errorf("icsProbe = %v, %v; want %v", occurs, err, tt.occurs)
			}
		})
	}
}

func TestICSParseProbeBudget(t *testing.T) {
	data := icsCalendarOf("DTSTART:20260302T090000Z\nRRULE:FREQ=DAILY")
	if _, err := icsParse(data, time.Hour); err != nil {
		t.Fatalf("with time to spare: %v", err)
	}
	_, err := icsParse(data, -time.Nanosecond)
	if err == nil || !strings.Contains(err.Error(), "recurrence rules take more than") {
		t.Errorf("over budget: err = %v; want the probe budget exceeded", err)
	}
}

// TestICSFreeSlots runs a feed through FreeSlots: a weekly meeting removes exactly its own
// slots, on the same wall-clock hours before and after the change to summer time.
func TestICSFreeSlots(t *testing.T) {
	s := mustSchedule(t, berlinHeader+"slotMinutes: 60\nweekly: {monday: [09:00-12:00]}\n")
	q := Query{From: local("2026-03-23 00:00"), To: local("2026-04-07 00:00"), Now: local("2026-03-01 00:00")}
	feed := icsCalendarOf(`
DTSTART;TZID=Europe/Berlin:20260302T100000
DTEND;TZID=Europe/Berlin:20260302T110000
RRULE:FREQ=WEEKLY;BYDAY=MO`)

	for _, tt := range []struct {
		name string
		feed []byte
		want []string
	}{{
		name: "without the feed",
		want: []string{
			"2026-03-23 09:00-10:00", "2026-03-23 10:00-11:00", "2026-03-23 11:00-12:00",
			"2026-03-30 09:00-10:00", "2026-03-30 10:00-11:00", "2026-03-30 11:00-12:00",
			"2026-04-06 09:00-10:00", "2026-04-06 10:00-11:00", "2026-04-06 11:00-12:00",
		},
	}, {
		name: "with the weekly meeting",
		feed: feed,
		want: []string{
			"2026-03-23 09:00-10:00", "2026-03-23 11:00-12:00",
			"2026-03-30 09:00-10:00", "2026-03-30 11:00-12:00",
			"2026-04-06 09:00-10:00", "2026-04-06 11:00-12:00",
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			var busy []Interval
			if tt.feed != nil {
				var err error
				if busy, err = ParseICSBusy(tt.feed, q.From, q.To, s.Location); err != nil {
					t.Fatalf("ParseICSBusy: %v", err)
				}
			}
			slots, truncated := FreeSlots(s, q, busy)
			if truncated {
				t.Error("truncated")
			}
			if diff := cmp.Diff(tt.want, wall(slots)); diff != "" {
				t.Errorf("slots (-want +got):\n%s", diff)
			}
		})
	}
}
