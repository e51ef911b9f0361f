//go:build !unix

package pdftext

import "github.com/tetratelabs/wazero/experimental"

func newLinearMemory(m *memoryCap, capacity, maximum uint64) experimental.LinearMemory {
	return &sliceMemory{m: m, buf: make([]byte, 0, capacity), max: maximum}
}
