package logs

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// writes records every Write, as a file or a pipe would receive them.
type writes struct {
	mu  sync.Mutex
	all bytes.Buffer
	n   int
}

func (w *writes) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n++
	return w.all.Write(p)
}

func (w *writes) lines() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Split(strings.TrimSuffix(w.all.String(), "\n"), "\n")
}

func request(h *JSON, level slog.Level, route string) {
	if !h.Request(context.Background(), time.Now(), level, "request", "GET", route, 200, 1, nil) {
		panic("not written by the fast path")
	}
}

// TestBufferedLinesKeepTheirOrder: a record other than a request line, and a server
// error's request line, are written at once, after every request line before them; and
// Flush writes the rest.
func TestBufferedLinesKeepTheirOrder(t *testing.T) {
	var w writes
	h := NewJSON(&w, slog.LevelDebug)
	logger := slog.New(h)
	request(h, slog.LevelInfo, "/1")
	request(h, slog.LevelDebug, "/2")
	logger.Warn("between")
	if got := w.lines(); len(got) != 3 || !strings.Contains(got[0], `"/1"`) || !strings.Contains(got[1], `"/2"`) || !strings.Contains(got[2], `"between"`) {
		t.Fatalf("after a warning, want /1, /2, between; got %q", got)
	}
	request(h, slog.LevelInfo, "/3")
	request(h, slog.LevelError, "/4")
	if got := w.lines(); len(got) != 5 || !strings.Contains(got[3], `"/3"`) || !strings.Contains(got[4], `"/4"`) {
		t.Fatalf("after a server error's line, want /3, /4 at the end; got %q", got)
	}
	request(h, slog.LevelInfo, "/5")
	if err := h.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := w.lines(); len(got) != 6 || !strings.Contains(got[5], `"/5"`) {
		t.Fatalf("after Flush, want /5 at the end; got %q", got)
	}
}

// TestBufferedLinesConcurrently: lines from many goroutines are all written, whole, each
// goroutine's in its order; the buffer never holds much more than maxBuffered.
func TestBufferedLinesConcurrently(t *testing.T) {
	var w writes
	h := NewJSON(&w, slog.LevelInfo)
	const goroutines, each = 8, 2000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				request(h, slog.LevelInfo, fmt.Sprintf("/%d/%d", g, i))
			}
		}()
	}
	wg.Wait()
	if err := h.Flush(); err != nil {
		t.Fatal(err)
	}
	next := make([]int, goroutines)
	lines := w.lines()
	if len(lines) != goroutines*each {
		t.Fatalf("%d lines, want %d", len(lines), goroutines*each)
	}
	for _, l := range lines {
		var g, i int
		if _, err := fmt.Sscanf(l[strings.Index(l, `"route":"`)+9:], "/%d/%d", &g, &i); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if i != next[g] {
			t.Fatalf("goroutine %d: line %d after %d", g, i, next[g]-1)
		}
		next[g]++
	}
	h.w.mu.Lock()
	defer h.w.mu.Unlock()
	if c := max(cap(h.w.buf), cap(h.w.spare)); c > 4*maxBuffered {
		t.Errorf("a buffer grew to %d bytes", c)
	}
}
