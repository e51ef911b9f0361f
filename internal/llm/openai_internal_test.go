package llm

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		header map[string]string
		want   time.Duration
	}{
		{header: nil, want: 0},
		{header: map[string]string{"Retry-After": "2"}, want: 2 * time.Second},
		{header: map[string]string{"Retry-After": "0.5"}, want: 500 * time.Millisecond},
		{header: map[string]string{"Retry-After-Ms": "120", "Retry-After": "1"}, want: 120 * time.Millisecond},
		{header: map[string]string{"Retry-After-Ms": "junk", "Retry-After": "1"}, want: time.Second},
		{header: map[string]string{"Retry-After": now.Add(3 * time.Second).Format(http.TimeFormat)}, want: 3 * time.Second},
		{header: map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, want: 0},
		{header: map[string]string{"Retry-After": "-5"}, want: 0},
		{header: map[string]string{"Retry-After": "NaN"}, want: 0},
		{header: map[string]string{"Retry-After": "1e300"}, want: maxRetryAfter},
		{header: map[string]string{"Retry-After": "3600"}, want: maxRetryAfter},
		{header: map[string]string{"Retry-After": "soon"}, want: 0},
	} {
		t.Run("", func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			if got := retryAfter(h, now); got != tc.want {
				t.Errorf("retryAfter(%v) = %s, want %s", tc.header, got, tc.want)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	o := &OpenAI{base: 100 * time.Millisecond, max: time.Second}
	for _, tc := range []struct {
		attempt  int
		min, max time.Duration
	}{
		{attempt: 1, min: 50 * time.Millisecond, max: 100 * time.Millisecond},
		{attempt: 2, min: 100 * time.Millisecond, max: 200 * time.Millisecond},
		{attempt: 3, min: 200 * time.Millisecond, max: 400 * time.Millisecond},
		{attempt: 5, min: 500 * time.Millisecond, max: time.Second},
		{attempt: 1000, min: 500 * time.Millisecond, max: time.Second},
	} {
		t.Run("", func(t *testing.T) {
			for range 100 {
				if d := o.backoff(tc.attempt); d < tc.min || d > tc.max {
					t.Fatalf("backoff(%d) = %s, want within [%s, %s]", tc.attempt, d, tc.min, tc.max)
				}
			}
		})
	}
}
