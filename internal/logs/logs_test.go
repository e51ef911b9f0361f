package logs

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"
)

// TestRequestLineIsSlogs: the fast path writes what slog's JSONHandler writes for the
// same record, for every level, zone and attribute set; strings that need escaping are
// left to slog.
func TestRequestLineIsSlogs(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	times := []time.Time{
		time.Date(2026, 12, 1, 19, 5, 3, 123456789, time.UTC),
		time.Date(2026, 3, 29, 2, 30, 0, 0, berlin),
		time.Date(2026, 1, 1, 0, 0, 0, 1000, time.FixedZone("", -3*3600-1800)),
		time.Now(), // with a monotonic reading
	}
	// The same second in other zones and with other fractions, one after the other, as
	// the formatted second is remembered.
	base := time.Date(2026, 12, 1, 19, 5, 3, 0, time.UTC)
	for _, ns := range []int{0, 1, 10, 100000000, 120000000, 123000000, 999999999, 500} {
		times = append(times, base.Add(time.Duration(ns)), base.Add(time.Duration(ns)).In(berlin), base.Add(time.Duration(ns)).In(time.FixedZone("", 3600)))
	}
	attrSets := [][]Attr{nil, {{"tool", "search_site"}}, {{"tool", "get_free_slots"}, {"channel", "webmcp"}, {"code", "rate_limited"}}}
	for _, tm := range times {
		for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
			for _, attrs := range attrSets {
				var fast, slow bytes.Buffer
				h := NewJSON(&fast, slog.LevelDebug)
				if !h.Request(context.Background(), tm, level, "request", "GET", "/api/chat/tools", 304, 1234, attrs) {
					t.Fatal("plain strings were not written by the fast path")
				}
				r := slog.NewRecord(tm, level, "request", 0)
				r.AddAttrs(slog.String("method", "GET"), slog.String("route", "/api/chat/tools"), slog.Int("status", 304), slog.Int64("latency_us", 1234))
				for _, a := range attrs {
					r.AddAttrs(slog.String(a.Key, a.Value))
				}
				if err := slog.NewJSONHandler(&slow, &slog.HandlerOptions{Level: slog.LevelDebug}).Handle(context.Background(), r); err != nil {
					t.Fatal(err)
				}
				if err := h.Flush(); err != nil {
					t.Fatal(err)
				}
				if fast.String() != slow.String() {
					t.Errorf("fast:\n%s\nslog:\n%s", fast.String(), slow.String())
				}
			}
		}
	}
	var out bytes.Buffer
	h := NewJSON(&out, slog.LevelDebug)
	for _, method := range []string{"GE\"T", "G<T", "GET\n", "GÉT", `G\T`} {
		if h.Request(context.Background(), time.Now(), slog.LevelInfo, "request", method, "/", 200, 1, nil) {
			t.Errorf("method %q was written by the fast path", method)
		}
	}
	if out.Len() != 0 {
		t.Errorf("wrote %q", out.String())
	}
}
