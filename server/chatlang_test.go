package server

import "testing"

func TestChatLanguage(t *testing.T) {
	for _, tc := range []struct {
		requested, acceptLanguage, want string
	}{
		{"", "", "en"},
		{"de", "", "de"},
		{"DE", "", "de"},
		{"de-AT", "", "de"},
		{"en", "de-DE,de;q=0.9", "en"},
		{"", "de-DE,de;q=0.9,en;q=0.8", "de"},
		{"", "de-CH", "de"},
		{"", "fr-FR,fr;q=0.9,de;q=0.5", "de"},
		{"", "en-GB,de;q=0.5", "en"},
		{"", "fr, it", "en"},
		{"", "*", "en"},
		{"", "not a header;;;", "en"},
		{"fr", "", "en"},
		{"fr", "de", "de"},
		{"xx-invalid-tag-that-is-long", "", "en"},
		{"<script>", "", "en"},
	} {
		if got := chatLanguage(tc.requested, tc.acceptLanguage); got != tc.want {
			t.Errorf("chatLanguage(%q, %q) = %q, want %q", tc.requested, tc.acceptLanguage, got, tc.want)
		}
	}
}
