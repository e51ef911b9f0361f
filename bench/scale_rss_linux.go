//go:build linux

package main

import (
	"os"
	"syscall"
)

// peakRSS is the peak resident set of an exited child process (rusage's ru_maxrss, in
// kB on Linux), in bytes.
func peakRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss << 10
	}
	return 0
}
