package assistant

import (
	"encoding/json"
	"net/url"
	"strings"

	"github.com/sitetools/sitetools/tools"
)

// collectSources notes the pages a successful result names: search results
// ({"results":[{title,url,anchor}]}) and single pages ({title,url}).
func (t *turnState) collectSources(res *tools.Result) {
	if res.StructuredContent == nil {
		return
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return
	}
	var v struct {
		Title   string   `json:"title"`
		URL     string   `json:"url"`
		Anchor  string   `json:"anchor"`
		Results []Source `json:"results"`
	}
	if json.Unmarshal(b, &v) != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if v.Title != "" && v.URL != "" {
		t.addSource(Source{Title: v.Title, URL: v.URL, Anchor: v.Anchor})
	}
	for _, s := range v.Results {
		if s.Title != "" && s.URL != "" {
			t.addSource(s)
		}
	}
}

// addSource adds s unless it is there already; t.mu is held.
func (t *turnState) addSource(s Source) {
	key := s.URL + "#" + s.Anchor
	if t.seen[key] {
		return
	}
	t.seen[key] = true
	t.sources = append(t.sources, s)
}

// usedSources are the pages the answer cites, by url or path; if it cites none, every
// page the turn's tools returned.
func (t *turnState) usedSources(mode string) []Source {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := []Source{}
	if mode == ModeLLM {
		answer := t.answer.String()
		for _, s := range t.sources {
			if cites(answer, s.URL) {
				out = append(out, s)
			}
		}
	}
	if len(out) == 0 {
		out = append(out, t.sources...)
	}
	return out
}

func cites(answer, pageURL string) bool {
	if strings.Contains(answer, pageURL) {
		return true
	}
	u, err := url.Parse(pageURL)
	if err != nil || len(strings.Trim(u.Path, "/")) == 0 {
		return false // the home page's path "/" is in every url
	}
	return strings.Contains(answer, u.Path)
}

// contactWords are what an answer that points the visitor to a person says: a link to the
// contact page (/contact, /kontakt, in any language's section) or the page's or form's
// name, in English or German, as the model or the fallback texts put it.
var contactWords = []string{"/contact", "/kontakt", "contact page", "contact form", "kontaktseite", "kontaktformular"}

// pointsToContact reports whether answer offers the hand-over to a person.
func pointsToContact(answer string) bool {
	lower := strings.ToLower(answer)
	for _, w := range contactWords {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}
