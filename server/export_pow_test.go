package server

import "time"

// SetPressure makes f say whether the paced LLM budget runs short
// (CHAT_PROOF_OF_WORK=pressure); set it before the requests that read it.
func (a *App) SetPressure(f func() bool) { a.pressure = f }

// SetProofOfWorkClock makes now the proof of work's clock, for challenges issued and
// checked after it is set.
func (a *App) SetProofOfWorkClock(now func() time.Time) { a.pow.now = now }
