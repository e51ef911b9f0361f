package logs

import (
	"io"
	"runtime"
	"sync"
)

// maxBuffered is how many bytes of request lines may wait to be written: past it, the
// request that adds a line writes them itself, and waits for the writer as it would
// without the buffer.
const maxBuffered = 64 << 10

// lineWriter writes the handler's output to one writer, in order. A request line of the
// fast path is not written by its request: it is added to a buffer, and a goroutine
// started for the purpose writes what the buffer holds once the goroutines ready to run
// have had their turn. On an idle server a line is written a moment after its request;
// on a busy one, one write carries the lines of many requests instead of one write per
// request (a system call each, on a file or a pipe). Every other record is written at
// once, after the lines buffered before it. Flush writes what is left.
type lineWriter struct {
	w   io.Writer
	out sync.Mutex // held while writing to w: one write at a time, in order

	mu        sync.Mutex // guards the fields below
	buf       []byte     // lines not yet written
	spare     []byte     // the other buffer, while not being written
	scheduled bool       // a goroutine will write buf
}

// Write writes the lines buffered, then p: slog's records.
func (l *lineWriter) Write(p []byte) (int, error) {
	l.out.Lock()
	defer l.out.Unlock()
	err := l.drain()
	n, werr := l.w.Write(p)
	if werr != nil {
		return n, werr
	}
	return n, err
}

// line buffers a request line (a copy of p).
func (l *lineWriter) line(p []byte) {
	l.mu.Lock()
	l.buf = append(l.buf, p...)
	full := len(l.buf) >= maxBuffered
	start := !full && !l.scheduled
	if start {
		l.scheduled = true
	}
	l.mu.Unlock()
	switch {
	case full:
		_ = l.Flush()
	case start:
		go l.writeSoon()
	}
}

func (l *lineWriter) writeSoon() {
	// The goroutines ready to run (requests under way) go first, and add their lines.
	runtime.Gosched()
	_ = l.Flush()
}

// Flush writes the lines buffered.
func (l *lineWriter) Flush() error {
	l.out.Lock()
	defer l.out.Unlock()
	return l.drain()
}

// drain writes the buffer with l.out held; lines added meanwhile go to the other one.
func (l *lineWriter) drain() error {
	l.mu.Lock()
	b := l.buf
	l.buf, l.spare = l.spare[:0], nil
	l.scheduled = false
	l.mu.Unlock()
	var err error
	if len(b) > 0 {
		_, err = l.w.Write(b)
	}
	l.mu.Lock()
	l.spare = b[:0]
	l.mu.Unlock()
	return err
}
