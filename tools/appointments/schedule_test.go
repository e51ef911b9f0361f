package appointments

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var compareLocations = cmp.Comparer(func(a, b *time.Location) bool { return a.String() == b.String() })

func TestLoadScheduleExample(t *testing.T) {
	f, err := os.Open("testdata/availability.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := LoadSchedule(f)
	if err != nil {
		t.Fatalf("LoadSchedule: %v", err)
	}
	long := []OpeningRange{{9 * 60, 12 * 60}, {13 * 60, 17 * 60}}
	want := &Schedule{
		Location: mustLocation(t, "Europe/Berlin"),
		Weekly: [7][]OpeningRange{
			time.Monday:    long,
			time.Tuesday:   long,
			time.Wednesday: {{9 * 60, 12 * 60}},
			time.Thursday:  long,
			time.Friday:    {{9 * 60, 12 * 60}, {13 * 60, 15 * 60}},
			time.Saturday:  {},
			time.Sunday:    {},
		},
		Slot:          30 * time.Minute,
		Step:          15 * time.Minute,
		BufferBefore:  10 * time.Minute,
		BufferAfter:   10 * time.Minute,
		MinimumNotice: 4 * time.Hour,
		HorizonDays:   60,
		Closed: []DateRange{
			{Date{2026, time.May, 1}, Date{2026, time.May, 1}},
			{Date{2026, time.December, 24}, Date{2026, time.December, 31}},
		},
	}
	if diff := cmp.Diff(want, got, compareLocations); diff != "" {
		t.Errorf("schedule (-want +got):\n%s", diff)
	}
}

func TestParseSchedule(t *testing.T) {
	for _, tt := range []struct {
		name string
		yaml string
		want *Schedule
	}{{
		name: "defaults, unsorted ranges, 24:00, unquoted dates and aliases",
		yaml: `
timezone: UTC
slotMinutes: 45
horizonDays: 14
weekly:
  saturday: &weekend ["20:00-24:00", "00:00-02:00"]
  sunday: *weekend
  monday:
closed: [2026-12-31..2027-01-01, 2026-12-24]
`,
		want: &Schedule{
			Location: time.UTC,
			Weekly: [7][]OpeningRange{
				time.Saturday: {{0, 120}, {20 * 60, 24 * 60}},
				time.Sunday:   {{0, 120}, {20 * 60, 24 * 60}},
			},
			Slot:        45 * time.Minute,
			Step:        45 * time.Minute, // defaults to slotMinutes
			HorizonDays: 14,
			Closed: []DateRange{
				{Date{2026, time.December, 24}, Date{2026, time.December, 24}},
				{Date{2026, time.December, 31}, Date{2027, time.January, 1}},
			},
		},
	}, {
		name: "touching ranges are separate ranges",
		yaml: `{timezone: Asia/Kolkata, slotMinutes: 30, stepMinutes: 10, horizonDays: 1, minimumNoticeMinutes: 1439,
                weekly: {friday: ["12:00-13:00", " 09:00 - 12:00 "]}}`,
		want: &Schedule{
			Location:      mustLocation(t, "Asia/Kolkata"),
			Weekly:        [7][]OpeningRange{time.Friday: {{9 * 60, 12 * 60}, {12 * 60, 13 * 60}}},
			Slot:          30 * time.Minute,
			Step:          10 * time.Minute,
			MinimumNotice: 1439 * time.Minute,
			HorizonDays:   1,
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSchedule([]byte(tt.yaml))
			if err != nil {
				t.Fatalf("ParseSchedule: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, compareLocations); diff != "" {
				t.Errorf("schedule (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseScheduleErrors(t *testing.T) {
	const valid = "timezone: Europe/Berlin\nslotMinutes: 30\nhorizonDays: 30\n"
	for _, tt := range []struct {
		name string
		yaml string
		want []string // every problem, in order
	}{{
		name: "unknown time zone",
		yaml: "timezone: Mars/Olympus\nslotMinutes: 30\nhorizonDays: 30\nweekly: {monday: [09:00-17:00]}",
		want: []string{`timezone: unknown time zone "Mars/Olympus"`},
	}, {
		name: "machine-dependent Local time zone",
		yaml: "timezone: Local\nslotMinutes: 30\nhorizonDays: 30\nweekly: {monday: [09:00-17:00]}",
		want: []string{`timezone: want an IANA time zone such as Europe/Berlin, got "Local"`},
	}, {
		name: "time zone is not a string",
		yaml: "timezone: [Europe/Berlin]\nslotMinutes: 30\nhorizonDays: 30\nweekly: {monday: [09:00-17:00]}",
		want: []string{`timezone: want a string, got a list`},
	}, {
		name: "range ends before it starts",
		yaml: valid + "weekly:\n  monday: [\"09:00-12:00\", \"17:00-09:00\"]\n",
		want: []string{`weekly.monday[1]: end 09:00 is before start 17:00`},
	}, {
		name: "empty range",
		yaml: valid + "weekly: {tuesday: [\"10:00-10:00\"]}",
		want: []string{`weekly.tuesday[0]: end 10:00 is not after start 10:00`},
	}, {
		name: "overlapping ranges, reported at the later one whatever the order",
		yaml: valid + "weekly:\n  monday: [\"11:00-13:00\", \"14:00-15:00\", \"09:00-12:00\"]\n  friday: [\"09:00-12:00\", \"11:30-12:30\"]\n",
		want: []string{
			`weekly.monday[2]: 09:00-12:00 overlaps weekly.monday[0] 11:00-13:00`,
			`weekly.friday[1]: 11:30-12:30 overlaps weekly.friday[0] 09:00-12:00`,
		},
	}, {
		name: "malformed ranges",
		yaml: valid + "weekly:\n  monday: [\"9-17\", \"25:00-26:00\", \"09:60-10:00\", \"09:00-24:01\", \"0900-1000\", \"+9:00-10:00\", [\"09:00\"]]\n",
		want: []string{
			`weekly.monday[0]: "9-17" is not a range "HH:MM-HH:MM" (00:00 to 24:00)`,
			`weekly.monday[1]: "25:00-26:00" is not a range "HH:MM-HH:MM" (00:00 to 24:00)`,
			`weekly.monday[2]: "09:60-10:00" is not a range "HH:MM-HH:MM" (00:00 to 24:00)`,
			`weekly.monday[3]: "09:00-24:01" is not a range "HH:MM-HH:MM" (00:00 to 24:00)`,
			`weekly.monday[4]: "0900-1000" is not a range "HH:MM-HH:MM" (00:00 to 24:00)`,
			`weekly.monday[5]: "+9:00-10:00" is not a range "HH:MM-HH:MM" (00:00 to 24:00)`,
			`weekly.monday[6]: want a range "HH:MM-HH:MM", got a list`,
		},
	}, {
		name: "range shorter than a slot",
		yaml: valid + "weekly: {monday: [\"09:00-09:15\"]}",
		want: []string{`weekly.monday[0]: 09:00-09:15 is shorter than slotMinutes (30)`},
	}, {
		name: "unknown and repeated weekdays, a day that is not a list",
		yaml: valid + "weekly:\n  funday: [\"09:00-10:00\"]\n  Monday: [\"09:00-10:00\"]\n  monday: [\"09:00-10:00\"]\n  monday: [\"11:00-12:00\"]\n  tuesday: \"09:00-17:00\"\n",
		want: []string{
			`weekly.funday: unknown weekday (want monday, tuesday, wednesday, thursday, friday, saturday or sunday)`,
			`weekly.Monday: unknown weekday (want monday, tuesday, wednesday, thursday, friday, saturday or sunday)`,
			`weekly.monday: given more than once`,
			`weekly.tuesday: want a list of "HH:MM-HH:MM" ranges, got "09:00-17:00"`,
		},
	}, {
		name: "no opening hours at all",
		yaml: valid + "weekly: {monday: [], sunday: }",
		want: []string{`weekly: no opening hours on any day`},
	}, {
		name: "weekly is not a mapping",
		yaml: valid + "weekly: [\"09:00-17:00\"]",
		want: []string{`weekly: want a mapping from weekday (monday..sunday) to a list of "HH:MM-HH:MM" ranges, got a list`},
	}, {
		name: "missing required fields",
		yaml: "{}",
		want: []string{
			`timezone: required (an IANA time zone such as Europe/Berlin)`,
			`slotMinutes: required`,
			`horizonDays: required`,
			`weekly: required (weekday → list of "HH:MM-HH:MM" ranges)`,
		},
	}, {
		name: "unknown and repeated fields",
		yaml: valid + "slotMinute: 30\nslotMinutes: 45\nweekly: {monday: [09:00-17:00]}",
		want: []string{
			`slotMinute: unknown field (known fields: timezone, weekly, slotMinutes, stepMinutes, bufferBeforeMinutes, bufferAfterMinutes, minimumNoticeMinutes, horizonDays, closed)`,
			`slotMinutes: given more than once`,
		},
	}, {
		name: "numbers of the wrong type or out of range",
		yaml: `
timezone: Europe/Berlin
slotMinutes: "30"
stepMinutes: 0
bufferBeforeMinutes: -5
bufferAfterMinutes: 7.5
horizonDays: 731
minimumNoticeMinutes: 99999999999999999999
weekly: {monday: [09:00-17:00]}
`,
		want: []string{
			`slotMinutes: want a whole number, got "30"`,
			`stepMinutes: 0 is out of range 1..1440`,
			`bufferBeforeMinutes: -5 is out of range 0..1440`,
			`bufferAfterMinutes: want a whole number, got "7.5"`,
			`horizonDays: 731 is out of range 1..730`,
			`minimumNoticeMinutes: want a whole number, got "99999999999999999999"`,
		},
	}, {
		name: "minimum notice beyond the horizon",
		yaml: valid + "minimumNoticeMinutes: 43200\nweekly: {monday: [09:00-17:00]}",
		want: []string{`minimumNoticeMinutes: 43200 minutes is not less than horizonDays (30 days), so no slot could ever be offered`},
	}, {
		name: "bad closed dates",
		yaml: valid + "weekly: {monday: [09:00-17:00]}\nclosed: [\"2026-02-30\", \"2026-12-31..2026-12-24\", \"24.12.2026\", \"2026-12-24..\", 2026-12-24, {a: b}]",
		want: []string{
			`closed[0]: "2026-02-30" is not a date "YYYY-MM-DD" or a range "YYYY-MM-DD..YYYY-MM-DD"`,
			`closed[1]: end 2026-12-24 is before start 2026-12-31`,
			`closed[2]: "24.12.2026" is not a date "YYYY-MM-DD" or a range "YYYY-MM-DD..YYYY-MM-DD"`,
			`closed[3]: "2026-12-24.." is not a date "YYYY-MM-DD" or a range "YYYY-MM-DD..YYYY-MM-DD"`,
			`closed[5]: want a date "YYYY-MM-DD" or a range "YYYY-MM-DD..YYYY-MM-DD", got a mapping`,
		},
	}, {
		name: "closed is not a list",
		yaml: valid + "weekly: {monday: [09:00-17:00]}\nclosed: 2026-12-24",
		want: []string{`closed: want a list of dates "YYYY-MM-DD" or ranges "YYYY-MM-DD..YYYY-MM-DD", got "2026-12-24"`},
	}, {
		name: "every problem at once",
		yaml: "timezone: Mars/Olympus\nslotMinutes: 30\nstepMinutes: 0\nhorizonDays: 30\nweekly: {monday: [17:00-09:00]}\nclosed: [2026-13-01]",
		want: []string{
			`timezone: unknown time zone "Mars/Olympus"`,
			`stepMinutes: 0 is out of range 1..1440`,
			`weekly.monday[0]: end 09:00 is before start 17:00`,
			`closed[0]: "2026-13-01" is not a date "YYYY-MM-DD" or a range "YYYY-MM-DD..YYYY-MM-DD"`,
		},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseSchedule([]byte(tt.yaml))
			if err == nil {
				t.Fatalf("ParseSchedule succeeded with %+v; want errors", s)
			}
			var got []string
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				var fe *FieldError
				if !errors.As(e, &fe) || fe.Field == "" {
					t.Errorf("error %q is not a *FieldError naming its field", e)
				}
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseScheduleDocumentErrors(t *testing.T) {
	for _, tt := range []struct {
		name, yaml, want string
	}{
		{"empty", "", "schedule is empty"},
		{"comment only", "# nothing\n", "schedule is empty"},
		{"not YAML", "timezone: [Europe/Berlin\n", "schedule is not valid YAML: "},
		{"a list", "- timezone: UTC\n", "schedule must be a YAML mapping of fields, got a list"},
		{"a scalar", "hello\n", `schedule must be a YAML mapping of fields, got "hello"`},
		{"two documents", "timezone: UTC\n---\ntimezone: UTC\n", "schedule must be a single YAML document"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSchedule([]byte(tt.yaml))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %v; want one starting with %q", err, tt.want)
			}
		})
	}
}

func TestLoadScheduleTooLarge(t *testing.T) {
	big := strings.NewReader("timezone: UTC\n" + strings.Repeat("#", maxScheduleSize))
	if _, err := LoadSchedule(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("err = %v; want a size error", err)
	}
}

func mustLocation(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}
