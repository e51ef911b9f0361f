// Package clientkey names a client (the rate limit's key: an address or an IPv6 /64) in
// the database by a keyed hash whose key changes with the UTC day, so that no table holds
// an address and a day's rows do not link to another day's.
package clientkey

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"time"
)

// Size is the length of a key in bytes.
const Size = 16

// Hasher names clients under one secret. The secret is never written to the database:
// a dump cannot be matched against guessed addresses without it.
type Hasher struct {
	secret []byte
}

// New returns a hasher keyed by secret, which every replica must share for a client to
// have the same name on all of them. A nil or empty secret gets a random one, for this
// process only: a client's name then holds on this replica alone.
func New(secret []byte) *Hasher {
	if len(secret) == 0 {
		secret = make([]byte, 32)
		_, _ = rand.Read(secret)
	}
	return &Hasher{secret: secret}
}

// Key is client's name for purpose on day (its UTC date): HMAC-SHA-256 under the day's
// key HMAC(secret, purpose + " " + date), cut to Size bytes. Each use names its own
// purpose, so that the names one table holds do not match another's.
func (h *Hasher) Key(purpose string, day time.Time, client string) []byte {
	dk := hmac.New(sha256.New, h.secret)
	dk.Write([]byte(purpose + " " + day.UTC().Format(time.DateOnly)))
	m := hmac.New(sha256.New, dk.Sum(nil))
	m.Write([]byte(client))
	return m.Sum(nil)[:Size]
}
