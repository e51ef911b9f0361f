package altcha_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/altcha"
)

var (
	secret = bytes.Repeat([]byte{7}, 32)
	now    = time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
)

func newKey(t *testing.T, s []byte) *altcha.Key {
	t.Helper()
	k, err := altcha.NewKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func solved(t *testing.T, k *altcha.Key, maxNumber int, expires time.Time) (altcha.Challenge, int64) {
	t.Helper()
	c, err := k.Create(maxNumber, expires)
	if err != nil {
		t.Fatal(err)
	}
	n, ok := altcha.Solve(c)
	if !ok {
		t.Fatalf("no number up to %d solves %+v", maxNumber, c)
	}
	return c, n
}

// TestChallengeShape: a challenge is ALTCHA's v1 JSON: its challenge is SHA-256 of the
// salt and a number up to maxnumber, signed with HMAC-SHA-256 of the key, and its salt
// carries the expiry, closed by "&".
func TestChallengeShape(t *testing.T) {
	k := newKey(t, secret)
	c, n := solved(t, k, 1000, now.Add(5*time.Minute))
	b, _ := json.Marshal(c)
	var fields map[string]any
	_ = json.Unmarshal(b, &fields)
	for _, f := range []string{"algorithm", "challenge", "maxnumber", "salt", "signature"} {
		if _, ok := fields[f]; !ok {
			t.Errorf("no %q in %s", f, b)
		}
	}
	if c.Algorithm != "SHA-256" || c.MaxNumber != 1000 || n < 0 || n > 1000 {
		t.Errorf("challenge %+v solved by %d", c, n)
	}
	if want := "?expires=" + strconv.FormatInt(now.Add(5*time.Minute).Unix(), 10) + "&"; !strings.HasSuffix(c.Salt, want) || len(c.Salt) != 24+len(want) {
		t.Errorf("salt %q, want 24 hex digits and %q", c.Salt, want)
	}
	sum := sha256.Sum256([]byte(c.Salt + strconv.FormatInt(n, 10)))
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(c.Challenge))
	if c.Challenge != hex.EncodeToString(sum[:]) || c.Signature != hex.EncodeToString(m.Sum(nil)) {
		t.Errorf("challenge or signature not as the protocol has them: %+v", c)
	}
	// Two challenges differ in their salt.
	if other, _ := k.Create(1000, now); other.Salt[:24] == c.Salt[:24] {
		t.Errorf("two challenges with the salt %q", c.Salt)
	}
}

// TestVerify: each way a solution can be wrong, and the right one.
func TestVerify(t *testing.T) {
	k := newKey(t, secret)
	expires := now.Add(5 * time.Minute)
	c, n := solved(t, k, 2000, expires)
	otherKey := newKey(t, bytes.Repeat([]byte{8}, 32))
	forged, forgedN := solved(t, otherKey, 2000, expires)

	payload := func(fields map[string]any) string {
		b, _ := json.Marshal(fields)
		return base64.StdEncoding.EncodeToString(b)
	}
	fields := func(change func(map[string]any)) string {
		f := map[string]any{"algorithm": c.Algorithm, "challenge": c.Challenge, "number": n, "salt": c.Salt, "signature": c.Signature}
		change(f)
		return payload(f)
	}
	// The digits of the expiry moved: the same string hashed, another expiry.
	moved := fields(func(f map[string]any) {
		s := c.Salt[:len(c.Salt)-1] + strconv.FormatInt(n, 10)[:1]
		f["salt"] = s
		f["number"] = json.Number(strconv.FormatInt(n, 10)[1:] + "0")
	})

	for _, tc := range []struct {
		name    string
		payload string
		at      time.Time
		want    error
	}{
		{"solved", c.Payload(n), now, nil},
		{"solved, with the widget's own extra field", fields(func(f map[string]any) { f["took"] = 42 }), now, nil},
		{"expired", c.Payload(n), expires, altcha.ErrExpired},
		{"long expired", c.Payload(n), expires.Add(time.Hour), altcha.ErrExpired},
		{"another key's challenge", forged.Payload(forgedN), now, altcha.ErrInvalid},
		{"the wrong number", c.Payload(n + 1), now, altcha.ErrInvalid},
		{"a signature of another key", fields(func(f map[string]any) { f["signature"] = forged.Signature }), now, altcha.ErrInvalid},
		{"a salt with a later expiry", fields(func(f map[string]any) {
			f["salt"] = c.Salt[:24] + "?expires=" + strconv.FormatInt(expires.Add(time.Hour).Unix(), 10) + "&"
		}), now, altcha.ErrInvalid},
		{"digits moved between salt and number", moved, now, altcha.ErrInvalid},
		{"another algorithm", fields(func(f map[string]any) { f["algorithm"] = "SHA-1" }), now, altcha.ErrInvalid},
		{"a negative number", fields(func(f map[string]any) { f["number"] = -1 }), now, altcha.ErrInvalid},
		{"a number with a fraction", fields(func(f map[string]any) { f["number"] = json.Number(strconv.FormatInt(n, 10) + ".0") }), now, altcha.ErrInvalid},
		{"a number as a string", fields(func(f map[string]any) { f["number"] = strconv.FormatInt(n, 10) }), now, altcha.ErrInvalid},
		{"no number", fields(func(f map[string]any) { delete(f, "number") }), now, altcha.ErrInvalid},
		{"upper-case hex", fields(func(f map[string]any) { f["challenge"] = strings.ToUpper(c.Challenge) }), now, altcha.ErrInvalid},
		{"not base64", "not base64!", now, altcha.ErrInvalid},
		{"base64 of not JSON", base64.StdEncoding.EncodeToString([]byte("number=5")), now, altcha.ErrInvalid},
		{"empty", "", now, altcha.ErrInvalid},
		{"too long", strings.Repeat("A", altcha.MaxPayload+4), now, altcha.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := k.Verify(tc.payload, tc.at)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Verify: %v, want %v", err, tc.want)
			}
			if err == nil || errors.Is(err, altcha.ErrExpired) {
				if hex.EncodeToString(got.Challenge[:]) != c.Challenge || !got.Expires.Equal(expires.Truncate(time.Second)) {
					t.Errorf("solved %x until %v, want %s until %v", got.Challenge, got.Expires, c.Challenge, expires)
				}
			}
		})
	}
}

func TestNewKeyTooShort(t *testing.T) {
	if _, err := altcha.NewKey(make([]byte, 31)); err == nil {
		t.Error("a 31-byte secret was taken")
	}
}
