package clientkey_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/clientkey"
)

func TestKey(t *testing.T) {
	secret := []byte("a secret the replicas share, 32 bytes")
	day := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	h := clientkey.New(secret)
	base := h.Key("sitetools client share", day, "198.51.100.7")

	// The budgets' share rows were named so before this package: a deployment that
	// updates in the middle of a day keeps its visitors' shares.
	dk := hmac.New(sha256.New, secret)
	dk.Write([]byte("sitetools client share 2026-12-02"))
	m := hmac.New(sha256.New, dk.Sum(nil))
	m.Write([]byte("198.51.100.7"))
	if want := m.Sum(nil)[:16]; !bytes.Equal(base, want) {
		t.Fatalf("Key = %x, want %x", base, want)
	}

	for _, tc := range []struct {
		name string
		key  []byte
		same bool
	}{
		{"the same inputs", clientkey.New(secret).Key("sitetools client share", day, "198.51.100.7"), true},
		{"later the same UTC day", h.Key("sitetools client share", day.Add(23*time.Hour), "198.51.100.7"), true},
		{"the same instant in another zone", h.Key("sitetools client share", day.In(time.FixedZone("UTC-5", -5*3600)), "198.51.100.7"), true},
		{"the next day", h.Key("sitetools client share", day.Add(24*time.Hour), "198.51.100.7"), false},
		{"another purpose", h.Key("sitetools hand-over", day, "198.51.100.7"), false},
		{"another client", h.Key("sitetools client share", day, "198.51.100.8"), false},
		{"another secret", clientkey.New([]byte("another secret")).Key("sitetools client share", day, "198.51.100.7"), false},
		{"no secret: one of the process's own", clientkey.New(nil).Key("sitetools client share", day, "198.51.100.7"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.key) != clientkey.Size {
				t.Fatalf("%d bytes, want %d", len(tc.key), clientkey.Size)
			}
			if bytes.Equal(tc.key, base) != tc.same {
				t.Errorf("Key %x against %x: same %v, want %v", tc.key, base, !tc.same, tc.same)
			}
			if bytes.Contains(tc.key, []byte("198.51.100")) {
				t.Errorf("Key %x holds the address", tc.key)
			}
		})
	}
	if a, b := clientkey.New(nil), clientkey.New(nil); bytes.Equal(a.Key("p", day, "c"), b.Key("p", day, "c")) {
		t.Error("two hashers without a secret name a client alike")
	}
}
