package appointments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sitetools/sitetools/tools"
)

// BusySource yields busy time within [from, to): bookings, calendar feeds.
type BusySource interface {
	Busy(ctx context.Context, from, to time.Time, loc *time.Location) ([]Interval, error)
}

// Availability answers get_free_slots from a schedule minus the busy time of its
// sources. Its output types hold only slot bounds.
type Availability struct {
	Schedule *Schedule
	Sources  []BusySource
	Now      func() time.Time // nil: time.Now
	// MaxRange is the longest range one call may ask for (default 31 days).
	MaxRange time.Duration
	// Limit caps the slots of one answer (default DefaultLimit).
	Limit int
}

// Output is get_free_slots' answer: nothing but free time.
type Output struct {
	Timezone  string       `json:"timezone"`
	Slots     []OutputSlot `json:"slots"`
	Truncated bool         `json:"truncated,omitempty"`
}

// OutputSlot is one free slot in RFC 3339 with its offset.
type OutputSlot struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// Tool returns get_free_slots. Its schema is built from the schedule: durations are
// multiples of its step, at most its longest opening range.
func (a *Availability) Tool() (tools.Tool, error) {
	if a.Schedule == nil {
		return tools.Tool{}, errors.New("appointments.Tool: a schedule is required")
	}
	step := int(a.Schedule.Step / time.Minute)
	longest := 0
	for _, day := range a.Schedule.Weekly {
		for _, r := range day {
			longest = max(longest, r.End-r.Start)
		}
	}
	longest -= longest % step
	schema := fmt.Sprintf(`{
		"type": "object",
		"properties": {
			"from": {"type": "string", "anyOf": [{"format": "date"}, {"format": "date-time"}],
				"description": "Start of the range: a date (2026-12-01) or a date-time with offset (2026-12-01T09:00:00+01:00)."},
			"to": {"type": "string", "anyOf": [{"format": "date"}, {"format": "date-time"}],
				"description": "End of the range; a date includes that whole day. At most %d days after from."},
			"durationMinutes": {"type": "integer", "minimum": %d, "maximum": %d, "multipleOf": %d,
				"description": "Length of the appointment in minutes (default %d)."},
			"timezone": {"type": "string", "minLength": 1, "maxLength": 64,
				"description": "IANA time zone for the answer, e.g. Europe/London (default %s). Dates without an offset are read in it."}
		},
		"required": ["from", "to"],
		"additionalProperties": false
	}`, a.maxRangeDays(), step, longest, step, int(a.Schedule.Slot/time.Minute), a.Schedule.Location)
	return tools.Typed(tools.Tool{
		Name:  "get_free_slots",
		Title: "Find free appointment slots",
		Description: "Free times to book an appointment (e.g. an intro call) within a date range. " +
			"Returns only free slots, never anything about existing appointments.",
		InputSchema: json.RawMessage(schema),
		OutputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {
				"timezone": {"type": "string"},
				"slots": {"type": "array", "items": {
					"type": "object",
					"properties": {"start": {"type": "string", "format": "date-time"}, "end": {"type": "string", "format": "date-time"}},
					"required": ["start", "end"],
					"additionalProperties": false
				}},
				"truncated": {"type": "boolean", "description": "More slots exist than were returned: ask for a shorter range."}
			},
			"required": ["timezone", "slots"],
			"additionalProperties": false
		}`),
		Annotations: tools.Annotations{ReadOnly: true, Idempotent: true},
	}, a.handle)
}

func (a *Availability) maxRangeDays() int {
	if a.MaxRange <= 0 {
		return 31
	}
	return int(a.MaxRange / (24 * time.Hour))
}

type args struct {
	From            string `json:"from"`
	To              string `json:"to"`
	DurationMinutes int    `json:"durationMinutes"`
	Timezone        string `json:"timezone"`
}

func (a *Availability) handle(ctx context.Context, in args) (Output, error) {
	now := time.Now()
	if a.Now != nil {
		now = a.Now()
	}
	loc := a.Schedule.Location
	if in.Timezone != "" {
		l, err := loadZone(in.Timezone)
		if err != nil {
			return Output{}, tools.Fail("Unknown time zone %q: use an IANA name such as Europe/Berlin or America/New_York.", tools.Truncate(in.Timezone, 40))
		}
		loc = l
	}
	from, _, err := parseTime(in.From, loc)
	if err != nil {
		return Output{}, tools.Fail("from %q is not a date (2026-12-01) or a date-time with offset (2026-12-01T09:00:00+01:00).", tools.Truncate(in.From, 40))
	}
	to, toDate, err := parseTime(in.To, loc)
	if err != nil {
		return Output{}, tools.Fail("to %q is not a date (2026-12-01) or a date-time with offset (2026-12-01T17:00:00+01:00).", tools.Truncate(in.To, 40))
	}
	if toDate {
		to = to.AddDate(0, 0, 1) // a date as the end includes that day
	}
	if !to.After(from) {
		return Output{}, tools.Fail("The range ends before it starts: to must be after from.")
	}
	maxRange := time.Duration(a.maxRangeDays()) * 24 * time.Hour
	if to.Sub(from) > maxRange+time.Hour { // an hour of slack for a DST day in a date range
		return Output{}, tools.Fail("The range is %d days long; ask for at most %d days at a time.", int(to.Sub(from).Hours()/24), a.maxRangeDays())
	}
	horizon := now.AddDate(0, 0, a.Schedule.HorizonDays)
	if !to.After(now) {
		return Output{}, tools.Fail("The range is in the past; the earliest bookable time is %s.", now.Add(a.Schedule.MinimumNotice).In(loc).Format(time.RFC3339))
	}
	if !from.Before(horizon) {
		return Output{}, tools.Fail("The range starts after %s: appointments can be booked at most %d days ahead.", horizon.In(loc).Format(time.DateOnly), a.Schedule.HorizonDays)
	}

	// Busy time just outside the range still matters: buffers reach into it.
	lo, hi := from.Add(-a.Schedule.BufferBefore-a.Schedule.BufferAfter-24*time.Hour), to.Add(a.Schedule.BufferBefore+a.Schedule.BufferAfter+24*time.Hour)
	var busy []Interval
	for _, src := range a.Sources {
		iv, err := src.Busy(ctx, lo, hi, a.Schedule.Location)
		// A source that cannot say what is busy right now: fail closed, offer no slots
		// rather than show busy time as free.
		if errors.Is(err, ErrAvailabilityUnknown) {
			return Output{}, tools.Fail("Availability is temporarily unknown (a calendar could not be read); no slots can be offered right now. Try again in a few minutes.")
		}
		if err != nil {
			return Output{}, err
		}
		busy = append(busy, iv...)
	}
	slots, truncated := FreeSlots(a.Schedule, Query{From: from, To: to, Duration: time.Duration(in.DurationMinutes) * time.Minute, Now: now, Limit: a.Limit}, busy)
	out := Output{Timezone: loc.String(), Slots: make([]OutputSlot, len(slots)), Truncated: truncated}
	for i, s := range slots {
		out.Slots[i] = OutputSlot{Start: s.Start.In(loc).Format(time.RFC3339), End: s.End.In(loc).Format(time.RFC3339)}
	}
	return out, nil
}

// parseTime reads a date (at local midnight in loc) or an RFC 3339 date-time.
func parseTime(s string, loc *time.Location) (time.Time, bool, error) {
	s = strings.TrimSpace(s)
	if t, err := time.ParseInLocation(time.DateOnly, s, loc); err == nil {
		return t, true, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	return t, false, err
}

func loadZone(name string) (*time.Location, error) {
	if name == "Local" || strings.Contains(name, "..") {
		return nil, errors.New("not an IANA zone")
	}
	return time.LoadLocation(name)
}
