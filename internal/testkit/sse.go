package testkit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Event is one server-sent event of POST /api/chat: its name and its JSON data.
type Event struct {
	Name string
	Data json.RawMessage
}

// Events reads a chat stream event by event. Every frame must be
// "event: …\ndata: <JSON>\n\n" or a comment.
type Events struct{ r *bufio.Reader }

// NewEvents reads the stream r.
func NewEvents(r io.Reader) *Events { return &Events{r: bufio.NewReaderSize(r, 64<<10)} }

// Next returns the next event; io.EOF when the stream ended cleanly between events,
// io.ErrUnexpectedEOF when it ended inside one.
func (s *Events) Next() (Event, error) {
	var ev Event
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && line == "" && ev.Name == "" {
				return ev, io.EOF
			}
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return ev, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "event: "):
			ev.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.Data = json.RawMessage(strings.TrimPrefix(line, "data: "))
			if !json.Valid(ev.Data) {
				return ev, fmt.Errorf("event data is not JSON: %q", line)
			}
		case line == "":
			if ev.Name != "" {
				return ev, nil
			}
		default:
			return ev, fmt.Errorf("unexpected line %q", line)
		}
	}
}

// Rest reads the stream to its end and returns its events; err is nil only if the
// stream ended cleanly.
func (s *Events) Rest() ([]Event, error) {
	var out []Event
	for {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

// EventNames lists the events' names, a run of message.delta as one.
func EventNames(events []Event) []string {
	var out []string
	for _, e := range events {
		if len(out) > 0 && e.Name == "message.delta" && out[len(out)-1] == "message.delta" {
			continue
		}
		out = append(out, e.Name)
	}
	return out
}

// AnswerText is the answer's text: the message.delta events' text joined.
func AnswerText(events []Event) (string, error) {
	var b strings.Builder
	for _, e := range events {
		if e.Name == "message.delta" {
			var d struct{ Text string }
			if err := json.Unmarshal(e.Data, &d); err != nil {
				return "", fmt.Errorf("message.delta: %w", err)
			}
			b.WriteString(d.Text)
		}
	}
	return b.String(), nil
}
