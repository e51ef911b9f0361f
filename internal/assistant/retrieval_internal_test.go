package assistant

import (
	"strings"
	"testing"
)

// TestHitLineKeepsMarksInPairs: a snippet cut inside a match does not leave its opening
// ** alone (the German demo answer showed "**Acce…").
func TestHitLineKeepsMarksInPairs(t *testing.T) {
	snippet := strings.Repeat("x", 290) + " **Accessibility** audit"
	line := hitLine(0, searchHit{Title: "Pricing", URL: "https://site.example/pricing", Snippet: snippet})
	if n := strings.Count(line, "**"); n%2 != 0 {
		t.Fatalf("%d ** marks in %q", n, line)
	}
	if !strings.HasSuffix(line, " Accessi…\n") {
		t.Fatalf("line ends %q", line[len(line)-20:])
	}
	whole := hitLine(0, searchHit{Title: "Pricing", URL: "https://site.example/pricing", Snippet: "the **Accessibility** audit"})
	if !strings.Contains(whole, "the **Accessibility** audit") {
		t.Fatalf("a whole snippet changed: %q", whole)
	}
}
