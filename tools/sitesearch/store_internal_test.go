package sitesearch

import "testing"

// TestBoundSnippetKeepsMarksInPairs: a snippet cut inside a match, or between the two
// stars of a mark, shows no lone "**" (a visitor would see it as text).
func TestBoundSnippetKeepsMarksInPairs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short **match** here", 40, "short **match** here"},
		{"a  b\n\tc", 40, "a b c"},
		{"we do **accessibility audits** and more", 12, "we do acce…"},
		{"we do **accessibility audits** and more", 7, "we do…"},
		{"we do **accessibility audits** and more", 28, "we do accessibility audits…"},
		{"we do **accessibility audits** and more", 29, "we do accessibility audits…"},
		{"we do **accessibility audits** and more", 30, "we do **accessibility audits**…"},
		{"**a** and **bé**", 14, "**a** and bé…"},
	} {
		if got := boundSnippet(tc.in, tc.n); got != tc.want {
			t.Errorf("boundSnippet(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
