// Package altcha issues and verifies proof-of-work challenges in the ALTCHA protocol
// (version 1, SHA-256), so that a browser pays a little CPU for each chat turn and a
// script pays the same for each of its thousands.
//
// A challenge is {algorithm, challenge, maxnumber, salt, signature}: challenge is
// hex(SHA-256(salt + number)) for a secret number in [0, maxnumber], and signature is
// hex(HMAC-SHA-256(key, challenge)). The client tries numbers until the hash matches and
// sends back base64(JSON{algorithm, challenge, number, salt, signature}). The salt
// carries the expiry, "<24 hex digits>?expires=<unix seconds>&": the final "&" ends the
// number, so that digits cannot be moved from the solution's number into the expiry (the
// hash of salt + number would not change). Nothing in a challenge names a visitor.
package altcha

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"time"
)

// Algorithm is the one hash algorithm issued and accepted.
const Algorithm = "SHA-256"

// MaxPayload is the longest solution accepted, in bytes of base64: one of ours is about
// 400.
const MaxPayload = 1024

var (
	// ErrInvalid is a solution that is not one of ours solved: not base64 JSON of the
	// right shape, another algorithm, a salt not as issued, a number whose hash is not
	// the challenge, or a signature that is not ours.
	ErrInvalid = errors.New("altcha: not a solved challenge of this site")
	// ErrExpired is a solved challenge of ours past its expiry.
	ErrExpired = errors.New("altcha: the challenge expired")
)

// Challenge is what a client is given to solve, in the protocol's JSON.
type Challenge struct {
	Algorithm string `json:"algorithm"`
	Challenge string `json:"challenge"`
	MaxNumber int    `json:"maxnumber"`
	Salt      string `json:"salt"`
	Signature string `json:"signature"`
}

// solution is what a client sends back, before it is decoded.
type solution struct {
	Algorithm string          `json:"algorithm"`
	Challenge string          `json:"challenge"`
	Number    json.RawMessage `json:"number"`
	Salt      string          `json:"salt"`
	Signature string          `json:"signature"`
}

// Solved is a verified solution: the challenge it solved, to be spent once, and when it
// expires.
type Solved struct {
	Challenge [sha256.Size]byte
	Expires   time.Time
}

// Key signs and verifies challenges. Every replica uses the same one.
type Key struct{ secret []byte }

// NewKey returns a key of secret, which must be at least 32 bytes.
func NewKey(secret []byte) (*Key, error) {
	if len(secret) < 32 {
		return nil, fmt.Errorf("altcha.NewKey: the secret has %d bytes, want at least 32", len(secret))
	}
	return &Key{secret: bytes.Clone(secret)}, nil
}

// Create returns a new challenge whose number is at most maxNumber, valid until expires
// (to the second).
func (k *Key) Create(maxNumber int, expires time.Time) (Challenge, error) {
	if maxNumber < 1 {
		return Challenge{}, fmt.Errorf("altcha.Create: maxNumber %d", maxNumber)
	}
	var random [12]byte
	if _, err := rand.Read(random[:]); err != nil {
		return Challenge{}, fmt.Errorf("altcha.Create: %w", err)
	}
	n, err := rand.Int(rand.Reader, big.NewInt(int64(maxNumber)+1))
	if err != nil {
		return Challenge{}, fmt.Errorf("altcha.Create: %w", err)
	}
	salt := hex.EncodeToString(random[:]) + "?expires=" + strconv.FormatInt(expires.Unix(), 10) + "&"
	challenge := hashHex(salt, n.Int64())
	return Challenge{Algorithm: Algorithm, Challenge: challenge, MaxNumber: maxNumber, Salt: salt, Signature: k.sign(challenge)}, nil
}

// saltForm is the salt as Create writes it; the expiry is its only parameter.
var saltForm = regexp.MustCompile(`^[0-9a-f]{24}\?expires=([0-9]{1,12})&$`)

// hexHash is a SHA-256 in lower-case hex, as challenges and signatures are written.
var hexHash = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Verify checks a solution as the client sent it: ErrInvalid unless it solves a
// challenge this key signed, ErrExpired if that challenge expired before now. It does
// not know whether the solution was used before: the caller spends Solved.Challenge.
func (k *Key) Verify(payload string, now time.Time) (Solved, error) {
	if len(payload) > MaxPayload {
		return Solved{}, ErrInvalid
	}
	raw, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return Solved{}, ErrInvalid
	}
	var s solution
	if json.Unmarshal(raw, &s) != nil || s.Algorithm != Algorithm || !hexHash.MatchString(s.Challenge) || !hexHash.MatchString(s.Signature) {
		return Solved{}, ErrInvalid
	}
	m := saltForm.FindStringSubmatch(s.Salt)
	if m == nil {
		return Solved{}, ErrInvalid
	}
	// A whole number in decimal, as a solver writes it: not a string, no sign, fraction
	// or exponent.
	number, err := strconv.ParseInt(string(s.Number), 10, 64)
	if err != nil || number < 0 || strconv.FormatInt(number, 10) != string(s.Number) {
		return Solved{}, ErrInvalid
	}
	if !hmac.Equal([]byte(hashHex(s.Salt, number)), []byte(s.Challenge)) ||
		!hmac.Equal([]byte(k.sign(s.Challenge)), []byte(s.Signature)) {
		return Solved{}, ErrInvalid
	}
	expiresUnix, _ := strconv.ParseInt(m[1], 10, 64)
	out := Solved{Expires: time.Unix(expiresUnix, 0)}
	hex.Decode(out.Challenge[:], []byte(s.Challenge))
	if !now.Before(out.Expires) {
		return out, ErrExpired
	}
	return out, nil
}

func (k *Key) sign(challenge string) string {
	m := hmac.New(sha256.New, k.secret)
	m.Write([]byte(challenge))
	return hex.EncodeToString(m.Sum(nil))
}

func hashHex(salt string, number int64) string {
	sum := sha256.Sum256([]byte(salt + strconv.FormatInt(number, 10)))
	return hex.EncodeToString(sum[:])
}

// Solve finds the challenge's number as a client does, trying 0, 1, 2, …; false if no
// number up to MaxNumber solves it. Tests and benchmarks solve with it.
func Solve(c Challenge) (int64, bool) {
	for n := int64(0); n <= int64(c.MaxNumber); n++ {
		if hashHex(c.Salt, n) == c.Challenge {
			return n, true
		}
	}
	return 0, false
}

// Payload is the solution of c with number, as a client sends it.
func (c Challenge) Payload(number int64) string {
	b, _ := json.Marshal(struct {
		Algorithm string `json:"algorithm"`
		Challenge string `json:"challenge"`
		Number    int64  `json:"number"`
		Salt      string `json:"salt"`
		Signature string `json:"signature"`
	}{c.Algorithm, c.Challenge, number, c.Salt, c.Signature})
	return base64.StdEncoding.EncodeToString(b)
}
