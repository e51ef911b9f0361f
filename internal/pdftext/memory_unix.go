//go:build unix

package pdftext

import (
	"sync"
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// mmapMemory reserves the whole cap as address space at once and grows in place: no
// copy while growing, pages of the OS only as PDFium touches them, and every page back
// to the OS when the document is done (munmap), not when the Go heap next shrinks.
type mmapMemory struct {
	m  *memoryCap
	mu sync.Mutex // Free may come from the goroutine that stops a document at its deadline
	// buf's len is the reservation; nil once freed.
	buf []byte
}

func newLinearMemory(m *memoryCap, capacity, maximum uint64) experimental.LinearMemory {
	b, err := syscall.Mmap(-1, 0, int(maximum), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return &sliceMemory{m: m, buf: make([]byte, 0, capacity), max: maximum}
	}
	return &mmapMemory{m: m, buf: b}
}

func (r *mmapMemory) Reallocate(size uint64) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	if size > uint64(len(r.buf)) {
		return r.m.refuse()
	}
	r.m.grew(size)
	return r.buf[:size:size]
}

func (r *mmapMemory) Free() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if buf := r.buf; buf != nil {
		r.buf = nil
		r.m.later(func() { _ = syscall.Munmap(buf) })
	}
}
