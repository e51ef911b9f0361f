package web

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestContactTopics: the contact form's topics are the contact page's front matter's,
// and a site whose contact page lists none gets a form without the choice.
func TestContactTopics(t *testing.T) {
	for _, tc := range []struct {
		front string
		want  []string // options; nil: no topic field
	}{
		{front: "title: Contact\ntopics: [Alpha, \"Beta & Co\"]\n", want: []string{"<option>Alpha</option>", "<option>Beta &amp; Co</option>"}},
		{front: "title: Contact\n"},
	} {
		dir := t.TempDir()
		for name, body := range map[string]string{
			"index.md":   "# Home\n\nWelcome.\n",
			"contact.md": "---\n" + tc.front + "---\n\n# Contact\n\nWrite to us.\n",
		} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		s, err := New(Options{PagesDir: dir, WidgetPath: os.DevNull})
		if err != nil {
			t.Fatal(err)
		}
		p, ok := s.Page("/contact")
		if !ok {
			t.Fatalf("no /contact page; pages %v", s.PagePaths())
		}
		body := string(p.Body)
		if tc.want == nil && strings.Contains(body, "sitetools-contact-topic") {
			t.Errorf("a contact page without topics has a topic field")
		}
		for _, w := range tc.want {
			if !strings.Contains(body, w) {
				t.Errorf("the contact form lacks %s", w)
			}
		}
	}
}
