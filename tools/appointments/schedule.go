package appointments

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	// Embedded so that schedules and requested zones load in a minimal container without
	// /usr/share/zoneinfo.
	_ "time/tzdata"

	"go.yaml.in/yaml/v3"
)

// Limits of a schedule; values outside them are configuration errors.
const (
	maxDayMinutes   = 24 * 60
	maxHorizonDays  = 730
	maxScheduleSize = 1 << 20
)

// Schedule is a validated availability configuration. Build it with LoadSchedule or
// ParseSchedule; FreeSlots relies on the invariants they check.
type Schedule struct {
	// Location is the IANA time zone in which opening hours and closed dates are read.
	Location *time.Location
	// Weekly holds each weekday's opening ranges, indexed by time.Weekday, sorted by start
	// and not overlapping. An empty day is closed.
	Weekly [7][]OpeningRange
	// Slot is the default slot length, Step the distance between candidate slot starts.
	Slot, Step time.Duration
	// BufferBefore and BufferAfter extend every busy interval at its start and end.
	BufferBefore, BufferAfter time.Duration
	// MinimumNotice is how far after now the earliest slot may start.
	MinimumNotice time.Duration
	// HorizonDays is how many calendar days after now the last slot may end.
	HorizonDays int
	// Closed lists whole local dates without slots, sorted by first date.
	Closed []DateRange
}

// OpeningRange is one range of opening hours in wall-clock minutes after local midnight;
// End may be 1440 (24:00).
type OpeningRange struct{ Start, End int }

func (r OpeningRange) String() string { return clock(r.Start) + "-" + clock(r.End) }

// Date is a calendar date without a time zone.
type Date struct {
	Year  int
	Month time.Month
	Day   int
}

func (d Date) String() string { return fmt.Sprintf("%04d-%02d-%02d", d.Year, d.Month, d.Day) }

// dayNumber counts days since 1970-01-01, so that dates compare as integers.
func (d Date) dayNumber() int64 {
	return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC).Unix() / 86400
}

// DateRange is an inclusive range of dates; a single closed day has First == Last.
type DateRange struct{ First, Last Date }

// FieldError is one problem in a schedule, located by its field path (e.g. "weekly.monday[1]").
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// LoadSchedule reads a YAML schedule from r and validates it; see ParseSchedule.
func LoadSchedule(r io.Reader) (*Schedule, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxScheduleSize+1))
	if err != nil {
		return nil, fmt.Errorf("read schedule: %w", err)
	}
	if len(b) > maxScheduleSize {
		return nil, fmt.Errorf("schedule is larger than %d bytes", maxScheduleSize)
	}
	return ParseSchedule(b)
}

// ParseSchedule decodes and validates a YAML schedule. Unknown fields are errors. Every
// problem is reported at once, joined with errors.Join, each a *FieldError naming its field.
//
// Fields: timezone (IANA, required); weekly (weekday monday..sunday → list of "HH:MM-HH:MM",
// required); slotMinutes (1..1440, required); stepMinutes (1..1440, default slotMinutes);
// bufferBeforeMinutes and bufferAfterMinutes (0..1440, default 0); minimumNoticeMinutes
// (default 0, less than the horizon); horizonDays (1..730, required); closed (list of
// "YYYY-MM-DD" or "YYYY-MM-DD..YYYY-MM-DD", inclusive).
func ParseSchedule(data []byte) (*Schedule, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("schedule is empty")
		}
		return nil, fmt.Errorf("schedule is not valid YAML: %w", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("schedule must be a single YAML document")
	}
	root := deref(&doc)
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = deref(root.Content[0])
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("schedule must be a YAML mapping of fields, got %s", describe(root))
	}

	var p parser
	fields := p.fields(root)
	s := &Schedule{}

	if n := fields["timezone"]; n == nil {
		p.errorf("timezone", "required (an IANA time zone such as Europe/Berlin)")
	} else if name, ok := p.str("timezone", n); ok {
		s.Location = p.location(name)
	}
	slot, slotOK := p.int(fields, "slotMinutes", true, 1, maxDayMinutes, 0)
	step, _ := p.int(fields, "stepMinutes", false, 1, maxDayMinutes, slot)
	before, _ := p.int(fields, "bufferBeforeMinutes", false, 0, maxDayMinutes, 0)
	after, _ := p.int(fields, "bufferAfterMinutes", false, 0, maxDayMinutes, 0)
	horizon, horizonOK := p.int(fields, "horizonDays", true, 1, maxHorizonDays, 0)
	notice, noticeOK := p.int(fields, "minimumNoticeMinutes", false, 0, maxHorizonDays*maxDayMinutes, 0)
	if horizonOK && noticeOK && notice >= horizon*maxDayMinutes {
		p.errorf("minimumNoticeMinutes", "%d minutes is not less than horizonDays (%d days), so no slot could ever be offered", notice, horizon)
	}
	if !slotOK {
		slot = 0 // unknown: skip the check that every range can hold a slot
	}
	if n := fields["weekly"]; n == nil {
		p.errorf("weekly", "required (weekday → list of \"HH:MM-HH:MM\" ranges)")
	} else {
		s.Weekly = p.weekly(n, slot)
	}
	if n := fields["closed"]; n != nil {
		s.Closed = p.closed(n)
	}

	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	s.Slot = time.Duration(slot) * time.Minute
	s.Step = time.Duration(step) * time.Minute
	s.BufferBefore = time.Duration(before) * time.Minute
	s.BufferAfter = time.Duration(after) * time.Minute
	s.MinimumNotice = time.Duration(notice) * time.Minute
	s.HorizonDays = horizon
	return s, nil
}

var knownFields = []string{
	"timezone", "weekly", "slotMinutes", "stepMinutes", "bufferBeforeMinutes",
	"bufferAfterMinutes", "minimumNoticeMinutes", "horizonDays", "closed",
}

var weekdays = map[string]time.Weekday{
	"monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
	"sunday": time.Sunday,
}

// parser collects every problem instead of stopping at the first.
type parser struct{ errs []error }

func (p *parser) errorf(field, format string, args ...any) {
	p.errs = append(p.errs, &FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

// fields maps each known top-level key to its value, reporting unknown and repeated keys.
func (p *parser) fields(m *yaml.Node) map[string]*yaml.Node {
	out := make(map[string]*yaml.Node)
	for i := 0; i+1 < len(m.Content); i += 2 {
		name := m.Content[i].Value
		switch {
		case !slices.Contains(knownFields, name):
			p.errorf(name, "unknown field (known fields: %s)", strings.Join(knownFields, ", "))
		case out[name] != nil:
			p.errorf(name, "given more than once")
		default:
			out[name] = deref(m.Content[i+1])
		}
	}
	return out
}

func (p *parser) str(field string, n *yaml.Node) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		p.errorf(field, "want a string, got %s", describe(n))
		return "", false
	}
	return n.Value, true
}

func (p *parser) location(name string) *time.Location {
	// "Local" would make the schedule depend on the machine it runs on.
	if name == "" || name == "Local" {
		p.errorf("timezone", "want an IANA time zone such as Europe/Berlin, got %q", name)
		return nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		p.errorf("timezone", "unknown time zone %q", name)
		return nil
	}
	return loc
}

// int reads an optional or required integer field within [lo, hi]; def is used when absent.
func (p *parser) int(fields map[string]*yaml.Node, field string, required bool, lo, hi, def int) (int, bool) {
	n := fields[field]
	if n == nil {
		if required {
			p.errorf(field, "required")
			return 0, false
		}
		return def, true
	}
	var v int
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&v) != nil {
		p.errorf(field, "want a whole number, got %s", describe(n))
		return 0, false
	}
	if v < lo || v > hi {
		p.errorf(field, "%d is out of range %d..%d", v, lo, hi)
		return 0, false
	}
	return v, true
}

func (p *parser) weekly(n *yaml.Node, slot int) [7][]OpeningRange {
	var week [7][]OpeningRange
	if n.Kind != yaml.MappingNode {
		p.errorf("weekly", "want a mapping from weekday (monday..sunday) to a list of \"HH:MM-HH:MM\" ranges, got %s", describe(n))
		return week
	}
	seen := make(map[string]bool)
	errsBefore, open := len(p.errs), false
	for i := 0; i+1 < len(n.Content); i += 2 {
		name, v := n.Content[i].Value, deref(n.Content[i+1])
		field := "weekly." + name
		wd, ok := weekdays[name]
		switch {
		case !ok:
			p.errorf(field, "unknown weekday (want monday, tuesday, wednesday, thursday, friday, saturday or sunday)")
			continue
		case seen[name]:
			p.errorf(field, "given more than once")
			continue
		}
		seen[name] = true
		week[wd] = p.day(field, v, slot)
		open = open || len(week[wd]) > 0
	}
	if !open && len(p.errs) == errsBefore {
		p.errorf("weekly", "no opening hours on any day")
	}
	return week
}

// numberedRange is an opening range with its index in the YAML list, for messages.
type numberedRange struct {
	r OpeningRange
	i int
}

// day parses one weekday's ranges; null or an empty list means closed all day.
func (p *parser) day(field string, n *yaml.Node, slot int) []OpeningRange {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.errorf(field, "want a list of \"HH:MM-HH:MM\" ranges, got %s", describe(n))
		return nil
	}
	var rs []numberedRange
	for i, item := range n.Content {
		item = deref(item)
		f := fmt.Sprintf("%s[%d]", field, i)
		if item.Kind != yaml.ScalarNode {
			p.errorf(f, "want a range \"HH:MM-HH:MM\", got %s", describe(item))
			continue
		}
		a, b, ok := strings.Cut(item.Value, "-")
		start, okA := parseClock(strings.TrimSpace(a))
		end, okB := parseClock(strings.TrimSpace(b))
		switch {
		case !ok || !okA || !okB:
			p.errorf(f, "%q is not a range \"HH:MM-HH:MM\" (00:00 to 24:00)", item.Value)
		case end < start:
			p.errorf(f, "end %s is before start %s", clock(end), clock(start))
		case end == start:
			p.errorf(f, "end %s is not after start %s", clock(end), clock(start))
		case slot > 0 && end-start < slot:
			p.errorf(f, "%s is shorter than slotMinutes (%d)", OpeningRange{start, end}, slot)
		default:
			rs = append(rs, numberedRange{OpeningRange{start, end}, i})
		}
	}
	slices.SortFunc(rs, func(x, y numberedRange) int { return x.r.Start - y.r.Start })
	out := make([]OpeningRange, 0, len(rs))
	for k, x := range rs {
		if k > 0 && x.r.Start < rs[k-1].r.End {
			first, second := rs[k-1], x
			if first.i > second.i {
				first, second = second, first
			}
			p.errorf(fmt.Sprintf("%s[%d]", field, second.i), "%s overlaps %s[%d] %s", second.r, field, first.i, first.r)
			continue
		}
		out = append(out, x.r)
	}
	return out
}

func (p *parser) closed(n *yaml.Node) []DateRange {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.errorf("closed", "want a list of dates \"YYYY-MM-DD\" or ranges \"YYYY-MM-DD..YYYY-MM-DD\", got %s", describe(n))
		return nil
	}
	var out []DateRange
	for i, item := range n.Content {
		item = deref(item)
		f := fmt.Sprintf("closed[%d]", i)
		if item.Kind != yaml.ScalarNode {
			p.errorf(f, "want a date \"YYYY-MM-DD\" or a range \"YYYY-MM-DD..YYYY-MM-DD\", got %s", describe(item))
			continue
		}
		a, b, isRange := strings.Cut(item.Value, "..")
		first, okA := parseDate(strings.TrimSpace(a))
		last, okB := first, true
		if isRange {
			last, okB = parseDate(strings.TrimSpace(b))
		}
		switch {
		case !okA || !okB:
			p.errorf(f, "%q is not a date \"YYYY-MM-DD\" or a range \"YYYY-MM-DD..YYYY-MM-DD\"", item.Value)
		case last.dayNumber() < first.dayNumber():
			p.errorf(f, "end %s is before start %s", last, first)
		default:
			out = append(out, DateRange{first, last})
		}
	}
	slices.SortFunc(out, func(x, y DateRange) int { return int(x.First.dayNumber() - y.First.dayNumber()) })
	return out
}

// parseClock reads "HH:MM" (or "H:MM") as minutes after midnight; 24:00 is allowed.
func parseClock(s string) (int, bool) {
	h, m, ok := strings.Cut(s, ":")
	if !ok || len(h) < 1 || len(h) > 2 || len(m) != 2 || !digits(h) || !digits(m) {
		return 0, false
	}
	hh, _ := strconv.Atoi(h)
	mm, _ := strconv.Atoi(m)
	if mm > 59 || hh*60+mm > maxDayMinutes {
		return 0, false
	}
	return hh*60 + mm, true
}

func digits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func clock(minutes int) string { return fmt.Sprintf("%02d:%02d", minutes/60, minutes%60) }

func parseDate(s string) (Date, bool) {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return Date{}, false
	}
	return Date{t.Year(), t.Month(), t.Day()}, true
}

func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// describe names what a node is for a message, e.g. "a list" or "\"abc\"".
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "nothing"
		}
		return strconv.Quote(n.Value)
	}
	return "an unexpected YAML node"
}
