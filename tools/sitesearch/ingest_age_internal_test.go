package sitesearch

import (
	"fmt"
	"testing"
	"time"
)

// TestDueAge: a page comes due between half and all of the maximum age, always at the
// same share for the same URL, and the pages of a site spread over that half.
func TestDueAge(t *testing.T) {
	week := 7 * 24 * time.Hour
	early, late := 0, 0
	for i := range 1000 {
		u := fmt.Sprintf("https://example.com/p/%d", i)
		d := dueAge(u, week)
		if d < week/2 || d >= week || d != dueAge(u, week) {
			t.Fatalf("%s: due at %s of a week (again %s)", u, d, dueAge(u, week))
		}
		if d < week*3/4 {
			early++
		} else {
			late++
		}
	}
	if early < 400 || late < 400 {
		t.Errorf("%d pages due in the first half of the window, %d in the second; want them spread", early, late)
	}
}
