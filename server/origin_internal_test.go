package server

import "testing"

// TestSameOrigin: a request is same-origin only when the Origin's scheme, host and port
// are the request's; X-Forwarded-Proto counts only from a trusted proxy.
func TestSameOrigin(t *testing.T) {
	for _, tc := range []struct {
		origin, scheme, host string
		want                 bool
	}{
		{"http://shop.example", "http", "shop.example", true},
		{"http://shop.example:80", "http", "shop.example", true},
		{"https://shop.example", "https", "shop.example:443", true},
		{"http://SHOP.example:8080", "http", "shop.example:8080", true},
		{"https://shop.example", "http", "shop.example", false},
		{"http://shop.example", "https", "shop.example", false},
		{"http://shop.example:8080", "http", "shop.example", false},
		{"http://shop.example.evil", "http", "shop.example", false},
		{"http://user@shop.example", "http", "shop.example", false},
		{"null", "http", "shop.example", false},
		{"http://[::1]:8080", "http", "[::1]:8080", true},
	} {
		if got := sameOrigin(tc.origin, tc.scheme, tc.host); got != tc.want {
			t.Errorf("sameOrigin(%q, %q, %q) = %v, want %v", tc.origin, tc.scheme, tc.host, got, tc.want)
		}
	}
}
