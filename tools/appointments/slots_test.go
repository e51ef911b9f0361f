package appointments

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var berlin = func() *time.Location {
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		panic(err)
	}
	return loc
}()

// local reads an unambiguous Berlin wall-clock time "2006-01-02 15:04".
func local(s string) time.Time {
	t, err := time.ParseInLocation("2006-01-02 15:04", s, berlin)
	if err != nil {
		panic(err)
	}
	return t
}

// at reads a time with an explicit offset, for wall-clock times that DST makes ambiguous.
func at(s string) time.Time {
	t, err := time.Parse("2006-01-02T15:04Z07:00", s)
	if err != nil {
		panic(err)
	}
	return t
}

func busyLocal(start, end string) Interval { return Interval{local(start), local(end)} }

// wall shows slots as Berlin wall-clock times, e.g. "2026-03-09 09:00-09:30".
func wall(slots []Slot) []string {
	out := make([]string, len(slots))
	for i, s := range slots {
		out[i] = s.Start.In(berlin).Format("2006-01-02 15:04") + "-" + s.End.In(berlin).Format("15:04")
	}
	return out
}

// withOffsets shows slots with their UTC offsets, e.g. "03:00+02:00-03:30+02:00".
func withOffsets(loc *time.Location) func([]Slot) []string {
	return func(slots []Slot) []string {
		out := make([]string, len(slots))
		for i, s := range slots {
			out[i] = s.Start.In(loc).Format("15:04Z07:00") + "-" + s.End.In(loc).Format("15:04Z07:00")
		}
		return out
	}
}

func mustSchedule(t testing.TB, yaml string) *Schedule {
	t.Helper()
	s, err := ParseSchedule([]byte(yaml))
	if err != nil {
		t.Fatalf("ParseSchedule: %v", err)
	}
	return s
}

// checkInvariants asserts what holds for every answer: strictly increasing starts, every slot
// exactly the requested length, every slot within the query, no more than the limit.
func checkInvariants(t *testing.T, s *Schedule, q Query, slots []Slot) {
	t.Helper()
	d := q.Duration
	if d == 0 {
		d = s.Slot
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	if len(slots) > limit {
		t.Errorf("%d slots; limit %d", len(slots), limit)
	}
	for i, sl := range slots {
		if got := sl.End.Sub(sl.Start); got != d {
			t.Errorf("slot %d %v lasts %v; want %v", i, sl, got, d)
		}
		if sl.Start.Before(q.From) || sl.End.After(q.To) {
			t.Errorf("slot %d %v outside [%v, %v)", i, sl, q.From, q.To)
		}
		if sl.Start.Before(q.Now.Add(s.MinimumNotice)) {
			t.Errorf("slot %d %v starts before now + notice", i, sl)
		}
		if i > 0 && !slots[i-1].Start.Before(sl.Start) {
			t.Errorf("slot %d %v does not start after slot %d %v", i, sl, i-1, slots[i-1])
		}
	}
}

const berlinHeader = "timezone: Europe/Berlin\nhorizonDays: 60\n"

func TestFreeSlots(t *testing.T) {
	monday := func(hhmm string) time.Time { return local("2026-03-09 " + hhmm) }
	nowBefore := local("2026-03-01 00:00")
	mondayQuery := Query{From: monday("00:00"), To: local("2026-03-10 00:00"), Now: nowBefore}
	lunchBreak := berlinHeader + "slotMinutes: 60\nweekly: {monday: [09:00-12:00, 13:00-17:00]}\n"
	morning := berlinHeader + "slotMinutes: 30\nweekly: {monday: [09:00-12:00]}\n"
	sunday := berlinHeader + "weekly: {sunday: [00:00-06:00]}\n"

	for _, tt := range []struct {
		name      string
		schedule  string
		q         Query
		busy      []Interval
		show      func([]Slot) []string // default: wall
		want      []string
		truncated bool
	}{{
		name:     "several ranges per day: no slot in the lunch break",
		schedule: lunchBreak,
		q:        mondayQuery,
		want: []string{
			"2026-03-09 09:00-10:00", "2026-03-09 10:00-11:00", "2026-03-09 11:00-12:00",
			"2026-03-09 13:00-14:00", "2026-03-09 14:00-15:00", "2026-03-09 15:00-16:00", "2026-03-09 16:00-17:00",
		},
	}, {
		name:     "a slot must fit within one range, even if ranges touch",
		schedule: berlinHeader + "slotMinutes: 30\nstepMinutes: 20\nweekly: {monday: [09:00-10:10, 10:10-10:40]}\n",
		q:        mondayQuery,
		want: []string{
			"2026-03-09 09:00-09:30", "2026-03-09 09:20-09:50", "2026-03-09 09:40-10:10",
			"2026-03-09 10:10-10:40",
		},
	}, {
		name:     "step shorter than the slot gives overlapping candidates",
		schedule: berlinHeader + "slotMinutes: 60\nstepMinutes: 30\nweekly: {monday: [09:00-11:00]}\n",
		q:        mondayQuery,
		want:     []string{"2026-03-09 09:00-10:00", "2026-03-09 09:30-10:30", "2026-03-09 10:00-11:00"},
	}, {
		name:     "overlapping, unsorted, duplicated and nested bookings",
		schedule: morning,
		q:        mondayQuery,
		busy: []Interval{
			busyLocal("2026-03-09 10:00", "2026-03-09 10:45"),
			busyLocal("2026-03-09 09:30", "2026-03-09 10:15"),
			busyLocal("2026-03-09 10:00", "2026-03-09 10:45"),
			busyLocal("2026-03-09 09:40", "2026-03-09 09:50"),
		},
		want: []string{"2026-03-09 09:00-09:30", "2026-03-09 11:00-11:30", "2026-03-09 11:30-12:00"},
	}, {
		name:     "bookings touching the edges of opening hours block nothing",
		schedule: lunchBreak,
		q:        mondayQuery,
		busy: []Interval{
			busyLocal("2026-03-09 08:00", "2026-03-09 09:00"),
			busyLocal("2026-03-09 12:00", "2026-03-09 13:00"),
			busyLocal("2026-03-09 17:00", "2026-03-09 18:00"),
		},
		want: []string{
			"2026-03-09 09:00-10:00", "2026-03-09 10:00-11:00", "2026-03-09 11:00-12:00",
			"2026-03-09 13:00-14:00", "2026-03-09 14:00-15:00", "2026-03-09 15:00-16:00", "2026-03-09 16:00-17:00",
		},
	}, {
		name:     "bookings overlapping the edges of opening hours",
		schedule: lunchBreak + "stepMinutes: 30\n",
		q:        mondayQuery,
		busy: []Interval{
			busyLocal("2026-03-09 08:00", "2026-03-09 09:30"),
			busyLocal("2026-03-09 11:30", "2026-03-09 13:30"),
			busyLocal("2026-03-09 16:59", "2026-03-09 18:00"),
		},
		want: []string{
			"2026-03-09 09:30-10:30", "2026-03-09 10:00-11:00", "2026-03-09 10:30-11:30",
			"2026-03-09 13:30-14:30", "2026-03-09 14:00-15:00", "2026-03-09 14:30-15:30", "2026-03-09 15:00-16:00", "2026-03-09 15:30-16:30",
		},
	}, {
		name:     "buffers before and after a booking",
		schedule: morning + "bufferBeforeMinutes: 15\nbufferAfterMinutes: 15\n",
		q:        mondayQuery,
		busy:     []Interval{busyLocal("2026-03-09 10:00", "2026-03-09 11:00")},
		want:     []string{"2026-03-09 09:00-09:30", "2026-03-09 11:30-12:00"},
	}, {
		name:     "buffer after only",
		schedule: morning + "bufferAfterMinutes: 30\n",
		q:        mondayQuery,
		busy:     []Interval{busyLocal("2026-03-09 10:00", "2026-03-09 11:00")},
		want:     []string{"2026-03-09 09:00-09:30", "2026-03-09 09:30-10:00", "2026-03-09 11:30-12:00"},
	}, {
		name:     "buffer before only, a slot may end where the buffer starts",
		schedule: morning + "bufferBeforeMinutes: 30\n",
		q:        mondayQuery,
		busy:     []Interval{busyLocal("2026-03-09 10:00", "2026-03-09 11:00")},
		want:     []string{"2026-03-09 09:00-09:30", "2026-03-09 11:00-11:30", "2026-03-09 11:30-12:00"},
	}, {
		name:     "buffers of neighbouring bookings merge",
		schedule: morning + "bufferBeforeMinutes: 15\nbufferAfterMinutes: 15\n",
		q:        mondayQuery,
		busy: []Interval{
			busyLocal("2026-03-09 09:00", "2026-03-09 09:15"),
			busyLocal("2026-03-09 10:00", "2026-03-09 10:15"),
		},
		want: []string{"2026-03-09 10:30-11:00", "2026-03-09 11:00-11:30", "2026-03-09 11:30-12:00"},
	}, {
		name:     "minimum notice counts from the injected now",
		schedule: berlinHeader + "slotMinutes: 30\nminimumNoticeMinutes: 90\nweekly: {monday: [09:00-12:00, 13:00-14:00]}\n",
		q:        Query{From: monday("00:00"), To: monday("23:59"), Now: monday("08:45")},
		want: []string{
			"2026-03-09 10:30-11:00", "2026-03-09 11:00-11:30", "2026-03-09 11:30-12:00",
			"2026-03-09 13:00-13:30", "2026-03-09 13:30-14:00",
		},
	}, {
		name:     "a slot may start exactly at now + notice",
		schedule: berlinHeader + "slotMinutes: 30\nminimumNoticeMinutes: 90\nweekly: {monday: [09:00-12:00]}\n",
		q:        Query{From: monday("00:00"), To: monday("23:59"), Now: monday("09:00")},
		want:     []string{"2026-03-09 10:30-11:00", "2026-03-09 11:00-11:30", "2026-03-09 11:30-12:00"},
	}, {
		name:     "slots lie within [From, To)",
		schedule: morning,
		q:        Query{From: monday("10:15"), To: monday("11:45"), Now: nowBefore},
		want:     []string{"2026-03-09 10:30-11:00", "2026-03-09 11:00-11:30"},
	}, {
		name:     "slots end within the horizon",
		schedule: "timezone: Europe/Berlin\nhorizonDays: 1\nslotMinutes: 30\nweekly: {monday: [09:00-12:00], tuesday: [09:00-12:00]}\n",
		q:        Query{From: monday("00:00"), To: local("2026-03-12 00:00"), Now: monday("10:00")},
		want: []string{
			"2026-03-09 10:00-10:30", "2026-03-09 10:30-11:00", "2026-03-09 11:00-11:30", "2026-03-09 11:30-12:00",
			"2026-03-10 09:00-09:30", "2026-03-10 09:30-10:00",
		},
	}, {
		name: "closed single days and ranges",
		schedule: berlinHeader + "slotMinutes: 60\nclosed: [2026-03-10, 2026-03-12..2026-03-13, 2026-03-01..2026-03-02]\n" +
			"weekly: {monday: [09:00-10:00], tuesday: [09:00-10:00], wednesday: [09:00-10:00], thursday: [09:00-10:00], friday: [09:00-10:00]}\n",
		q: Query{From: local("2026-03-02 00:00"), To: local("2026-03-16 00:00"), Now: nowBefore},
		want: []string{
			"2026-03-03 09:00-10:00", "2026-03-04 09:00-10:00", "2026-03-05 09:00-10:00", "2026-03-06 09:00-10:00",
			"2026-03-09 09:00-10:00", "2026-03-11 09:00-10:00",
		},
	}, {
		name:     "a range ending at 24:00",
		schedule: berlinHeader + "slotMinutes: 60\nweekly: {monday: [22:00-24:00], tuesday: [00:00-01:00]}\n",
		q:        Query{From: monday("00:00"), To: local("2026-03-11 00:00"), Now: nowBefore},
		want:     []string{"2026-03-09 22:00-23:00", "2026-03-09 23:00-00:00", "2026-03-10 00:00-01:00"},
	}, {
		name:     "a booking spanning midnight",
		schedule: berlinHeader + "slotMinutes: 60\nweekly: {monday: [20:00-24:00], tuesday: [00:00-04:00]}\n",
		q:        Query{From: monday("00:00"), To: local("2026-03-11 00:00"), Now: nowBefore},
		busy:     []Interval{busyLocal("2026-03-09 22:30", "2026-03-10 01:00")},
		want: []string{
			"2026-03-09 20:00-21:00", "2026-03-09 21:00-22:00",
			"2026-03-10 01:00-02:00", "2026-03-10 02:00-03:00", "2026-03-10 03:00-04:00",
		},
	}, {
		name:     "a booking spanning several days",
		schedule: berlinHeader + "slotMinutes: 60\nweekly: {monday: [09:00-12:00], tuesday: [09:00-12:00], wednesday: [09:00-12:00]}\n",
		q:        Query{From: monday("00:00"), To: local("2026-03-12 00:00"), Now: nowBefore},
		busy:     []Interval{busyLocal("2026-03-09 10:00", "2026-03-11 10:00")},
		want:     []string{"2026-03-09 09:00-10:00", "2026-03-11 10:00-11:00", "2026-03-11 11:00-12:00"},
	}, {
		name:     "an interval given end first is still busy",
		schedule: morning,
		q:        mondayQuery,
		busy:     []Interval{{Start: monday("11:00"), End: monday("09:30")}},
		want:     []string{"2026-03-09 09:00-09:30", "2026-03-09 11:00-11:30", "2026-03-09 11:30-12:00"},
	}, {
		name:     "busy time outside the query changes nothing",
		schedule: morning,
		q:        Query{From: monday("10:00"), To: monday("11:00"), Now: nowBefore},
		busy: []Interval{
			busyLocal("2026-03-09 09:00", "2026-03-09 10:00"),
			busyLocal("2026-03-09 11:00", "2026-03-09 12:00"),
			busyLocal("2026-02-01 00:00", "2026-02-02 00:00"),
		},
		want: []string{"2026-03-09 10:00-10:30", "2026-03-09 10:30-11:00"},
	}, {
		name:     "a duration longer than the slot, a multiple of the step",
		schedule: berlinHeader + "slotMinutes: 30\nweekly: {monday: [09:00-12:00, 13:00-17:00]}\n",
		q:        Query{From: monday("00:00"), To: local("2026-03-10 00:00"), Now: nowBefore, Duration: 90 * time.Minute},
		busy:     []Interval{busyLocal("2026-03-09 14:00", "2026-03-09 14:30")},
		want: []string{
			"2026-03-09 09:00-10:30", "2026-03-09 09:30-11:00", "2026-03-09 10:00-11:30", "2026-03-09 10:30-12:00",
			"2026-03-09 14:30-16:00", "2026-03-09 15:00-16:30", "2026-03-09 15:30-17:00",
		},
	}, {
		name:     "a duration longer than any range",
		schedule: lunchBreak,
		q:        Query{From: monday("00:00"), To: local("2026-03-10 00:00"), Now: nowBefore, Duration: 5 * time.Hour},
		want:     []string{},
	}, {
		name:      "the cap truncates",
		schedule:  lunchBreak,
		q:         Query{From: monday("00:00"), To: local("2026-03-10 00:00"), Now: nowBefore, Limit: 3},
		want:      []string{"2026-03-09 09:00-10:00", "2026-03-09 10:00-11:00", "2026-03-09 11:00-12:00"},
		truncated: true,
	}, {
		name:     "the cap at exactly the number of slots does not truncate",
		schedule: lunchBreak,
		q:        Query{From: monday("00:00"), To: local("2026-03-10 00:00"), Now: nowBefore, Limit: 7},
		want: []string{
			"2026-03-09 09:00-10:00", "2026-03-09 10:00-11:00", "2026-03-09 11:00-12:00",
			"2026-03-09 13:00-14:00", "2026-03-09 14:00-15:00", "2026-03-09 15:00-16:00", "2026-03-09 16:00-17:00",
		},
	}, {
		name:      "the cap truncates across days, keeping the earliest",
		schedule:  berlinHeader + "slotMinutes: 60\nweekly: {monday: [09:00-11:00], tuesday: [09:00-11:00], wednesday: [09:00-11:00]}\n",
		q:         Query{From: monday("00:00"), To: local("2026-03-12 00:00"), Now: nowBefore, Limit: 3},
		want:      []string{"2026-03-09 09:00-10:00", "2026-03-09 10:00-11:00", "2026-03-10 09:00-10:00"},
		truncated: true,
	}, {
		name:     "a zero now offers nothing",
		schedule: morning,
		q:        Query{From: monday("00:00"), To: local("2026-03-10 00:00")},
		want:     []string{},
	}, {
		name:     "a range that ends before it starts offers nothing",
		schedule: morning,
		q:        Query{From: local("2026-03-10 00:00"), To: monday("00:00"), Now: nowBefore},
		want:     []string{},
	}, {
		// 29 March 2026: 02:00 CET becomes 03:00 CEST.
		name:     "spring forward: no slot spans or starts in the missing hour",
		schedule: sunday + "slotMinutes: 30\n",
		q:        Query{From: at("2026-03-29T00:00+01:00"), To: at("2026-03-30T00:00+02:00"), Now: nowBefore},
		show:     withOffsets(berlin),
		want: []string{
			"00:00+01:00-00:30+01:00", "00:30+01:00-01:00+01:00", "01:00+01:00-01:30+01:00",
			"03:00+02:00-03:30+02:00", "03:30+02:00-04:00+02:00", "04:00+02:00-04:30+02:00",
			"04:30+02:00-05:00+02:00", "05:00+02:00-05:30+02:00", "05:30+02:00-06:00+02:00",
		},
	}, {
		name:     "spring forward with hour-long slots every half hour",
		schedule: sunday + "slotMinutes: 60\nstepMinutes: 30\n",
		q:        Query{From: at("2026-03-29T00:00+01:00"), To: at("2026-03-30T00:00+02:00"), Now: nowBefore},
		show:     withOffsets(berlin),
		want: []string{
			"00:00+01:00-01:00+01:00", "00:30+01:00-01:30+01:00",
			"03:00+02:00-04:00+02:00", "03:30+02:00-04:30+02:00", "04:00+02:00-05:00+02:00",
			"04:30+02:00-05:30+02:00", "05:00+02:00-06:00+02:00",
		},
	}, {
		// 25 October 2026: 03:00 CEST becomes 02:00 CET, so 02:00-03:00 happens twice.
		name:     "fall back: the repeated hour is offered once",
		schedule: sunday + "slotMinutes: 30\n",
		q:        Query{From: at("2026-10-25T00:00+02:00"), To: at("2026-10-26T00:00+01:00"), Now: local("2026-10-01 00:00")},
		show:     withOffsets(berlin),
		want: []string{
			"00:00+02:00-00:30+02:00", "00:30+02:00-01:00+02:00", "01:00+02:00-01:30+02:00", "01:30+02:00-02:00+02:00",
			"02:00+02:00-02:30+02:00", "02:30+01:00-03:00+01:00",
			"03:00+01:00-03:30+01:00", "03:30+01:00-04:00+01:00", "04:00+01:00-04:30+01:00",
			"04:30+01:00-05:00+01:00", "05:00+01:00-05:30+01:00", "05:30+01:00-06:00+01:00",
		},
	}, {
		name:     "fall back with hour-long slots",
		schedule: sunday + "slotMinutes: 60\n",
		q:        Query{From: at("2026-10-25T00:00+02:00"), To: at("2026-10-26T00:00+01:00"), Now: local("2026-10-01 00:00")},
		show:     withOffsets(berlin),
		want: []string{
			"00:00+02:00-01:00+02:00", "01:00+02:00-02:00+02:00", "02:00+01:00-03:00+01:00",
			"03:00+01:00-04:00+01:00", "04:00+01:00-05:00+01:00", "05:00+01:00-06:00+01:00",
		},
	}, {
		name:     "fall back: a booking in the first 02:00-03:00 leaves the second one's slot",
		schedule: sunday + "slotMinutes: 30\n",
		q:        Query{From: at("2026-10-25T01:00+02:00"), To: at("2026-10-25T04:00+01:00"), Now: local("2026-10-01 00:00")},
		busy:     []Interval{{at("2026-10-25T02:00+02:00"), at("2026-10-25T02:30+02:00")}},
		show:     withOffsets(berlin),
		want: []string{
			"01:00+02:00-01:30+02:00", "01:30+02:00-02:00+02:00", "02:30+01:00-03:00+01:00",
			"03:00+01:00-03:30+01:00", "03:30+01:00-04:00+01:00",
		},
	}, {
		// 1 November 2026 in New York: 02:00 EDT becomes 01:00 EST. Here time.Date resolves
		// the repeated 01:00 to its first occurrence, the opposite of Berlin.
		name:     "fall back west of UTC",
		schedule: "timezone: America/New_York\nhorizonDays: 60\nslotMinutes: 60\nweekly: {sunday: [00:00-04:00]}\n",
		q:        Query{From: at("2026-11-01T00:00-04:00"), To: at("2026-11-02T00:00-05:00"), Now: at("2026-10-20T00:00-04:00")},
		show:     withOffsets(mustLocation(t, "America/New_York")),
		want: []string{
			"00:00-04:00-01:00-04:00", "01:00-05:00-02:00-05:00", "02:00-05:00-03:00-05:00", "03:00-05:00-04:00-05:00",
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			s := mustSchedule(t, tt.schedule)
			busy := append([]Interval(nil), tt.busy...)
			got, truncated := FreeSlots(s, tt.q, tt.busy)
			show := tt.show
			if show == nil {
				show = wall
			}
			if diff := cmp.Diff(tt.want, show(got)); diff != "" {
				t.Errorf("slots (-want +got):\n%s", diff)
			}
			if truncated != tt.truncated {
				t.Errorf("truncated = %v; want %v", truncated, tt.truncated)
			}
			if diff := cmp.Diff(busy, tt.busy); diff != "" {
				t.Errorf("FreeSlots modified its busy input:\n%s", diff)
			}
			checkInvariants(t, s, tt.q, got)
		})
	}
}

// The DST cases above compare exact lists; these assert the two properties by themselves,
// for every slot length and step that divide an hour.
func TestFreeSlotsDSTProperties(t *testing.T) {
	springGap := at("2026-03-29T02:00+01:00") // = 03:00+02:00
	for _, slot := range []int{15, 30, 45, 60, 90, 120} {
		for _, step := range []int{5, 15, 30, 60} {
			t.Run(fmt.Sprintf("slot %d step %d", slot, step), func(t *testing.T) {
				s := mustSchedule(t, fmt.Sprintf("%sslotMinutes: %d\nstepMinutes: %d\nweekly: {sunday: [00:00-06:00]}\n", berlinHeader, slot, step))
				now := local("2026-03-01 00:00")

				spring, _ := FreeSlots(s, Query{From: at("2026-03-29T00:00+01:00"), To: at("2026-03-30T00:00+02:00"), Now: now}, nil)
				checkInvariants(t, s, Query{From: at("2026-03-29T00:00+01:00"), To: at("2026-03-30T00:00+02:00"), Now: now}, spring)
				if len(spring) == 0 {
					t.Fatal("no slots on 29 March")
				}
				for _, sl := range spring {
					if sl.Start.Before(springGap) && sl.End.After(springGap) {
						t.Errorf("slot %s spans the missing hour", withOffsets(berlin)([]Slot{sl}))
					}
					if ws, we := sl.Start.In(berlin), sl.End.In(berlin); we.Sub(ws) != time.Duration(slot)*time.Minute ||
						(we.Hour()*60+we.Minute())-(ws.Hour()*60+ws.Minute()) != slot {
						t.Errorf("slot %s: wall-clock length differs from %d minutes", withOffsets(berlin)([]Slot{sl}), slot)
					}
				}

				autumnQ := Query{From: at("2026-10-25T00:00+02:00"), To: at("2026-10-26T00:00+01:00"), Now: local("2026-10-01 00:00")}
				autumn, _ := FreeSlots(s, autumnQ, nil)
				checkInvariants(t, s, autumnQ, autumn)
				seen := make(map[string]bool)
				for _, sl := range autumn {
					w := sl.Start.In(berlin).Format("15:04")
					if seen[w] {
						t.Errorf("wall-clock start %s offered twice on 25 October", w)
					}
					seen[w] = true
				}
				// Every wall-clock start of the grid is offered once, except those before
				// 02:00 whose wall-clock end is 03:00 or later: no such slot has its
				// wall-clock length, as it contains the whole repeated hour.
				want := 0
				for w := 0; w+slot <= 6*60; w += step {
					if w >= 2*60 || w+slot < 3*60 {
						want++
					}
				}
				if len(autumn) != want {
					t.Errorf("%d slots on 25 October; want %d (one per wall-clock start)", len(autumn), want)
				}
			})
		}
	}
}

// TestFreeSlotsMatchesNaive checks the sort-merge-search against a direct comparison of every
// candidate slot with every busy interval, on random bookings.
func TestFreeSlotsMatchesNaive(t *testing.T) {
	s := mustSchedule(t, berlinHeader+`slotMinutes: 30
stepMinutes: 15
bufferBeforeMinutes: 10
bufferAfterMinutes: 5
weekly: {monday: [08:00-12:00, 13:00-18:00], tuesday: [09:00-17:00], wednesday: [00:00-24:00], saturday: [10:00-14:00]}
`)
	q := Query{From: local("2026-03-09 00:00"), To: local("2026-03-23 00:00"), Now: local("2026-03-01 00:00"), Limit: 1 << 20}
	all, _ := FreeSlots(s, q, nil)
	removedSome := false
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			busy := make([]Interval, rng.IntN(200))
			for i := range busy {
				start := q.From.Add(time.Duration(rng.IntN(16*24*60)-24*60) * time.Minute)
				end := start.Add(time.Duration(rng.IntN(240)) * time.Minute)
				if rng.IntN(20) == 0 {
					start, end = end, start
				}
				busy[i] = Interval{start, end}
			}
			want := wall(naiveFree(s, all, busy))
			got, _ := FreeSlots(s, q, busy)
			if diff := cmp.Diff(want, wall(got)); diff != "" {
				t.Errorf("slots (-naive +FreeSlots):\n%s", diff)
			}
			removedSome = removedSome || len(got) < len(all)
		})
	}
	if !removedSome {
		t.Error("random bookings never removed a slot; the test checks nothing")
	}
}

// naiveFree keeps the slots that overlap no busy interval extended by the buffers,
// comparing every slot with every interval.
func naiveFree(s *Schedule, all []Slot, busy []Interval) []Slot {
	var free []Slot
	for _, sl := range all {
		ok := true
		for _, b := range busy {
			bs, be := b.Start, b.End
			if be.Before(bs) {
				bs, be = be, bs
			}
			if sl.Start.Before(be.Add(s.BufferAfter)) && bs.Add(-s.BufferBefore).Before(sl.End) {
				ok = false
			}
		}
		if ok {
			free = append(free, sl)
		}
	}
	return free
}

// TestFreeSlotsLimitAcrossChunks covers queries with more candidates than FreeSlots checks
// at once, where the first candidates are all busy and the limit falls in a later batch.
func TestFreeSlotsLimitAcrossChunks(t *testing.T) {
	s := mustSchedule(t, "timezone: Europe/Berlin\nhorizonDays: 60\nslotMinutes: 5\nweekly: {"+
		"monday: [00:00-24:00], tuesday: [00:00-24:00], wednesday: [00:00-24:00], thursday: [00:00-24:00], "+
		"friday: [00:00-24:00], saturday: [00:00-24:00], sunday: [00:00-24:00]}\n")
	q := Query{From: local("2026-04-01 00:00"), To: local("2026-05-01 00:00"), Now: local("2026-03-31 00:00"), Limit: 1 << 20}
	all, _ := FreeSlots(s, q, nil)
	if len(all) != 30*288 {
		t.Fatalf("%d candidates; want %d", len(all), 30*288)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	busy := []Interval{busyLocal("2026-03-30 00:00", "2026-04-20 00:00")}
	for range 300 {
		start := local("2026-04-20 00:00").Add(time.Duration(rng.IntN(11*24*60)) * time.Minute)
		busy = append(busy, Interval{start, start.Add(time.Duration(rng.IntN(120)) * time.Minute)})
	}
	free := naiveFree(s, all, busy)
	for _, limit := range []int{1, 50, 200, 1000, len(free), 5000} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			q := q
			q.Limit = limit
			got, truncated := FreeSlots(s, q, busy)
			want := free[:min(limit, len(free))]
			if diff := cmp.Diff(wall(want), wall(got)); diff != "" {
				t.Errorf("slots (-naive +FreeSlots):\n%s", diff)
			}
			if wantTruncated := len(free) > limit; truncated != wantTruncated {
				t.Errorf("truncated = %v; want %v", truncated, wantTruncated)
			}
		})
	}
}

func TestFreeSlotsDefaultLimit(t *testing.T) {
	s := mustSchedule(t, berlinHeader+"slotMinutes: 5\nweekly: {monday: [00:00-24:00], tuesday: [00:00-24:00]}\n")
	q := Query{From: local("2026-03-09 00:00"), To: local("2026-03-11 00:00"), Now: local("2026-03-01 00:00")}
	got, truncated := FreeSlots(s, q, nil)
	if len(got) != DefaultLimit || !truncated {
		t.Fatalf("%d slots, truncated %v; want %d, true", len(got), truncated, DefaultLimit)
	}
	if diff := cmp.Diff([]string{"2026-03-09 00:00-00:05", "2026-03-09 16:35-16:40"}, wall([]Slot{got[0], got[len(got)-1]})); diff != "" {
		t.Errorf("first and last slot (-want +got):\n%s", diff)
	}
}

func BenchmarkFreeSlots31Days10kBookings(b *testing.B) {
	f, err := os.Open("testdata/availability.yaml")
	if err != nil {
		b.Fatal(err)
	}
	s, err := LoadSchedule(f)
	f.Close()
	if err != nil {
		b.Fatal(err)
	}
	now := local("2026-03-01 00:00")
	q := Query{From: now, To: now.AddDate(0, 0, 31), Now: now}
	rng := rand.New(rand.NewPCG(1, 2))
	busy := make([]Interval, 10_000)
	for i := range busy {
		// All within the window, so that every one is sorted and merged.
		start := now.Add(time.Duration(rng.IntN(31*24*60)) * time.Minute)
		busy[i] = Interval{start, start.Add(time.Duration(5+rng.IntN(25)) * time.Minute)}
	}
	var slots []Slot
	b.ReportAllocs()
	for b.Loop() {
		slots, _ = FreeSlots(s, q, busy)
	}
	b.ReportMetric(float64(len(slots)), "slots/op")
}
