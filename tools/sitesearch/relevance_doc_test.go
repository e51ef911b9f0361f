package sitesearch_test

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
)

// handWrittenHeading opens the section of docs/search-quality.md that is written by hand
// (how an owner measures their own site with `sitetools eval`): TestRelevanceByKind keeps
// it, as it is, when it writes the file again.
const handWrittenHeading = "## Your own questions: `sitetools eval`\n"

// handWritten is the hand-written section of the document at path: from its heading to the
// next heading of its level; "" when the document or the section does not exist.
func handWritten(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return sectionAt(string(b), handWrittenHeading)
}

// sectionAt is doc's section that starts with heading (a line "## …\n"), up to the next
// "## " heading.
func sectionAt(doc, heading string) string {
	i := strings.Index(doc, "\n"+heading)
	if i < 0 {
		return ""
	}
	rest := doc[i+1:]
	if j := strings.Index(rest[len(heading):], "\n## "); j >= 0 {
		return rest[:len(heading)+j+1]
	}
	return rest
}

func TestSectionAt(t *testing.T) {
	doc := "# T\n\n## A\n\na\n\n" + handWrittenHeading + "\nkept\n\n### sub\n\nx\n\n## Misses\n\nm\n"
	if got, want := sectionAt(doc, handWrittenHeading), handWrittenHeading+"\nkept\n\n### sub\n\nx\n\n"; got != want {
		t.Errorf("sectionAt = %q, want %q", got, want)
	}
	if got := sectionAt("# T\n\n## A\n", handWrittenHeading); got != "" {
		t.Errorf("no section: %q", got)
	}
}
