package content

import "testing"

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"price", "price", 0}, {"pirce", "price", 1}, {"acessibility", "accessibility", 1},
		{"kosten", "kostne", 1}, {"größe", "grösse", 2}, {"", "abc", 3}, {"audit", "adit", 1},
		{"serch", "search", 1}, {"reveiw", "review", 1}, {"proffesional", "professional", 2},
		{"büro", "buro", 1}, {"abc", "abcdef", 3},
	} {
		if got := EditDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
