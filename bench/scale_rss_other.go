//go:build !linux

package main

import "os"

// peakRSS is unknown where rusage does not report it in kB.
func peakRSS(*os.ProcessState) int64 { return 0 }
