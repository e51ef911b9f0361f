// Package logs is the service's JSON log: slog's JSONHandler, plus a fast path for the
// one line it writes per HTTP request. That line has a fixed shape, so it is formatted
// directly into a pooled buffer, byte for byte as the JSONHandler would format it (a
// test compares the two), at a fraction of the cost, and written together with the
// lines of the requests beside it (see lineWriter): call Flush before the process ends.
package logs

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// JSON is a slog.Handler writing JSON lines to one writer.
type JSON struct {
	*slog.JSONHandler
	w *lineWriter

	// second is the request lines' last second formatted, up to the fraction; the
	// zone after the fraction. A second is formatted once, not once per line.
	second atomic.Pointer[formattedSecond]
}

type formattedSecond struct {
	unix       int64
	loc        *time.Location
	offset     int
	date, zone string
}

// appendTime appends t as time.RFC3339Nano formats it.
func (h *JSON) appendTime(b []byte, t time.Time) []byte {
	_, offset := t.Zone()
	s := h.second.Load()
	if s == nil || s.unix != t.Unix() || s.loc != t.Location() || s.offset != offset {
		whole := t.Truncate(time.Second).Format(time.RFC3339)
		s = &formattedSecond{unix: t.Unix(), loc: t.Location(), offset: offset, date: whole[:19], zone: whole[19:]}
		h.second.Store(s)
	}
	b = append(b, s.date...)
	if ns := t.Nanosecond(); ns != 0 {
		var frac [10]byte
		frac[0] = '.'
		for i, n := 9, ns; i >= 1; i-- {
			frac[i] = byte('0' + n%10)
			n /= 10
		}
		end := 10
		for frac[end-1] == '0' {
			end--
		}
		b = append(b, frac[:end]...)
	}
	return append(b, s.zone...)
}

// NewJSON returns a handler writing to w at level and above.
func NewJSON(w io.Writer, level slog.Leveler) *JSON {
	lw := &lineWriter{w: w}
	return &JSON{JSONHandler: slog.NewJSONHandler(lw, &slog.HandlerOptions{Level: level}), w: lw}
}

// Flush writes the request lines not yet written; the handler stays usable.
func (h *JSON) Flush() error { return h.w.Flush() }

// Attr is a string attribute of a request line.
type Attr struct{ Key, Value string }

var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// Request writes the line {"time":…,"level":…,"msg":msg,"method":…,"route":…,
// "status":…,"latency_us":…, then attrs…}. It reports false, having written nothing,
// when a string needs JSON escaping; the caller then logs the line through slog.
func (h *JSON) Request(ctx context.Context, t time.Time, level slog.Level, msg, method, route string, status int, latencyUS int64, attrs []Attr) bool {
	if !plain(msg) || !plain(method) || !plain(route) {
		return false
	}
	for _, a := range attrs {
		if !plain(a.Key) || !plain(a.Value) {
			return false
		}
	}
	if y := t.Year(); y < 0 || y >= 10000 {
		return false
	}
	bp := bufs.Get().(*[]byte)
	b := append((*bp)[:0], `{"time":"`...)
	b = h.appendTime(b, t.Round(0))
	b = append(b, `","level":"`...)
	b = append(b, level.String()...)
	b = append(b, `","msg":"`...)
	b = append(b, msg...)
	b = append(b, `","method":"`...)
	b = append(b, method...)
	b = append(b, `","route":"`...)
	b = append(b, route...)
	b = append(b, `","status":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, `,"latency_us":`...)
	b = strconv.AppendInt(b, latencyUS, 10)
	for _, a := range attrs {
		b = append(b, `,"`...)
		b = append(b, a.Key...)
		b = append(b, `":"`...)
		b = append(b, a.Value...)
		b = append(b, '"')
	}
	b = append(b, "}\n"...)
	if level >= slog.LevelError {
		// A server error is written at once, with the lines before it.
		_, _ = h.w.Write(b)
	} else {
		h.w.line(b)
	}
	*bp = b
	bufs.Put(bp)
	return true
}

// plain reports whether s is written in JSON as it is: printable ASCII without quotes,
// backslashes or the characters slog escapes.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
