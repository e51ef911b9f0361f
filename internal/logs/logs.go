// Package logs is the service's JSON log: slog's JSONHandler, plus a fast path for the
// one line it writes per HTTP request. That line has a fixed shape, so it is formatted
// directly into a pooled buffer, byte for byte as the JSONHandler would format it (a
// test compares the two), at a fraction of the cost.
package logs

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"
)

// JSON is a slog.Handler writing JSON lines to one writer.
type JSON struct {
	*slog.JSONHandler
	w *lockedWriter
}

// NewJSON returns a handler writing to w at level and above.
func NewJSON(w io.Writer, level slog.Leveler) *JSON {
	lw := &lockedWriter{w: w}
	return &JSON{JSONHandler: slog.NewJSONHandler(lw, &slog.HandlerOptions{Level: level}), w: lw}
}

// lockedWriter makes the handler's writes and the fast path's one at a time, as the
// JSONHandler's own writes are.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

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
	b = t.Round(0).AppendFormat(b, time.RFC3339Nano)
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
	_, _ = h.w.Write(b)
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
