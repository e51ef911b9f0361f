package pdftext

import (
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// memoryCap hands PDFium its linear memory and remembers how much of it a document
// took: a document that fails with most of the cap in use ran out of it. (wazero refuses
// a growth past the cap, MemoryLimitPages, before asking the memory; PDFium's allocator
// asks for more than it needs, so it fails short of the cap.)
type memoryCap struct {
	refused atomic.Bool
	high    atomic.Uint64 // the most bytes the document's memory held
	max     uint64

	mu    sync.Mutex
	freed []func() // Free's work, done by release
}

// release returns the memories of the instances closed since the last call. Read calls
// it once its document is done: an instance stopped at its deadline is closed by another
// goroutine while its code may still be running on its memory.
func (m *memoryCap) release() {
	m.mu.Lock()
	freed := m.freed
	m.freed = nil
	m.mu.Unlock()
	for _, f := range freed {
		f()
	}
}

// later has f done at the next release.
func (m *memoryCap) later(f func()) {
	m.mu.Lock()
	m.freed = append(m.freed, f)
	m.mu.Unlock()
}

func (m *memoryCap) reset() { m.refused.Store(false); m.high.Store(0) }

// overrun reports whether the document ran out of memory: it asked for more than the cap,
// or its memory grew past half of it.
func (m *memoryCap) overrun() bool { return m.refused.Load() || m.high.Load() > m.max/2 }

func (m *memoryCap) refuse() []byte { m.refused.Store(true); return nil }

// grew records that the memory now holds size bytes.
func (m *memoryCap) grew(size uint64) {
	for {
		h := m.high.Load()
		if size <= h || m.high.CompareAndSwap(h, size) {
			return
		}
	}
}

// Allocate implements experimental.MemoryAllocator.
func (m *memoryCap) Allocate(capacity, maximum uint64) experimental.LinearMemory {
	return newLinearMemory(m, capacity, maximum)
}

// sliceMemory is wazero's own way, a Go slice grown by copying, for systems without
// mmap: its peak while growing is about twice the memory in use.
type sliceMemory struct {
	m   *memoryCap
	mu  sync.Mutex
	buf []byte
	max uint64
}

func (s *sliceMemory) Reallocate(size uint64) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if size > s.max {
		return s.m.refuse()
	}
	s.m.grew(size)
	if size > uint64(cap(s.buf)) {
		grown := make([]byte, size, min(max(size, 2*uint64(cap(s.buf))), s.max))
		copy(grown, s.buf)
		s.buf = grown
	}
	s.buf = s.buf[:size]
	return s.buf
}

func (s *sliceMemory) Free() {
	s.mu.Lock()
	s.buf = nil
	s.mu.Unlock()
}
