//go:build unix

package server

import "syscall"

func umask(mask int) int { return syscall.Umask(mask) }
