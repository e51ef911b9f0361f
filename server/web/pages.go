package web

import (
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sitetools/sitetools/internal/content"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"go.yaml.in/yaml/v3"
)

// readPages reads every Markdown file under dir. Hidden files and symbolic links are
// skipped, as the ingester skips them, so that the pages are the pages of the index.
func readPages(dir string) ([]*sourcePage, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("server: SITE_PAGES_DIR: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("server: SITE_PAGES_DIR: %s is not a directory", dir)
	}
	files, err := content.SiteFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("server: SITE_PAGES_DIR: %w", err)
	}
	var pages []*sourcePage
	for _, rel := range files {
		if ext := strings.ToLower(path.Ext(rel)); ext != ".md" && ext != ".markdown" {
			continue
		}
		page, err := readPage(dir, filepath.FromSlash(rel))
		if err != nil {
			return nil, fmt.Errorf("server: SITE_PAGES_DIR: %w", err)
		}
		pages = append(pages, page)
	}
	slices.SortFunc(pages, func(a, b *sourcePage) int { return strings.Compare(a.path, b.path) })
	return pages, nil
}

func readPage(root, rel string) (*sourcePage, error) {
	// The index's own reading gives the path, title and language, so that a search
	// result's url is a page here.
	doc, err := content.DocumentFromFile(root, rel, "http://site.invalid")
	if err != nil {
		return nil, err
	}
	src, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		return nil, err
	}
	front, rest := splitFrontMatter(src)
	body, err := renderMarkdown(rest)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	p := &sourcePage{path: doc.Path, title: doc.Title, lang: doc.Lang, body: body, topics: frontMatterStrings(front, "topics"), noindex: doc.NoIndex}
	for _, sec := range doc.Sections {
		if sec.Level == 1 && sec.Heading != "" {
			p.heading = sec.Heading
			break
		}
	}
	if p.title == "" {
		p.title = strings.TrimSuffix(path.Base(strings.TrimSuffix(doc.Path, "/")), path.Ext(doc.Path))
	}
	return p, nil
}

// splitFrontMatter returns a page's YAML front matter (nil for none) and the rest.
func splitFrontMatter(src []byte) (front map[string]any, body []byte) {
	src = bytes.TrimPrefix(src, []byte("\ufeff"))
	rest, ok := bytes.CutPrefix(src, []byte("---\n"))
	if !ok {
		if rest, ok = bytes.CutPrefix(src, []byte("---\r\n")); !ok {
			return nil, src
		}
	}
	for off := 0; off < len(rest); {
		line, _, _ := bytes.Cut(rest[off:], []byte("\n"))
		next := min(off+len(line)+1, len(rest))
		if t := string(bytes.TrimRight(line, " \t\r")); t == "---" || t == "..." {
			if yaml.Unmarshal(rest[:off], &front) != nil {
				return nil, src
			}
			return front, rest[next:]
		}
		off = next
	}
	return nil, src
}

// frontMatterStrings reads a list of strings from front matter; anything else is none.
func frontMatterStrings(front map[string]any, key string) []string {
	list, _ := front[key].([]any)
	var out []string
	for _, v := range list {
		if s, ok := v.(string); ok && strings.TrimSpace(s) != "" {
			out = append(out, strings.TrimSpace(s))
		}
	}
	return out
}

// renderMarkdown renders a page body. Raw HTML in the source is dropped, not passed
// through: the pages run under a strict CSP and are content, not code.
func renderMarkdown(src []byte) (template.HTML, error) {
	md := goldmark.New(
		goldmark.WithExtensions(extension.GFM),
		goldmark.WithParserOptions(parser.WithAutoHeadingID(), parser.WithHeadingAttribute()),
	)
	var out bytes.Buffer
	ctx := parser.NewContext(parser.WithIDs(content.NewHeadingIDs()))
	if err := md.Convert(src, &out, parser.WithContext(ctx)); err != nil {
		return "", err
	}
	return template.HTML(out.String()), nil
}

// link is one entry of a navigation list.
type link struct {
	Href, Label, Lang string
	Current           bool
}

// pageView is what the layout template renders.
type pageView struct {
	Lang, Title, FullTitle, SiteName, Home, ContactPath string
	GuidePath                                           string // of the relay guide, or ""
	Nav, Footer, Languages                              []link
	Body                                                template.HTML
	Contact                                             bool
	NoIndex                                             bool      // a robots meta element keeps crawlers' indexes off the page too
	Topics                                              []string  // of the contact form
	ContactTool                                         *formTool // the tool the contact form is a view of
	T                                                   map[string]string
}

var layout = template.Must(template.ParseFS(webFiles, "templates/*.html"))

// render builds every page and a 404 page per language once, at start-up.
func (s *Site) render(pages []*sourcePage) error {
	byPath := map[string]*sourcePage{}
	for _, p := range pages {
		byPath[p.path] = p
	}
	if root, ok := byPath["/"]; ok && root.lang != "" {
		s.rootLang = root.lang
	}
	sections := s.findSections(byPath)
	s.sections = sections
	for _, p := range pages {
		if isReserved(p.path) {
			return fmt.Errorf("server: SITE_PAGES_DIR: page %s would shadow a route of the service", p.path)
		}
		sec := sectionOf(p.path, sections)
		v := s.view(byPath, sections, sec, p.path)
		v.Title, v.Body = p.title, p.body
		if p.lang != "" {
			v.Lang = p.lang
		}
		v.Contact = path.Base(p.path) == "contact"
		if v.ContactTool = s.forms[contactTool]; v.Contact && v.ContactTool == nil {
			return fmt.Errorf("server: SITE_PAGES_DIR: the contact form of %s is a view of %s, which the site does not have", p.path, contactTool)
		}
		v.NoIndex = p.noindex
		if err := s.put(s.pages, p.path, v); err != nil {
			return err
		}
	}
	// Each section's search page, unless the site has a page of that name: the search
	// element in the page, where the header's opens a dialog.
	for _, sec := range sections {
		p := sec + searchName
		if _, ok := byPath[p]; ok {
			continue
		}
		v := s.view(byPath, sections, sec, "")
		v.Title = v.T["searchTitle"]
		v.NoIndex = true
		v.Body = template.HTML(`<h1>` + template.HTMLEscapeString(v.T["searchTitle"]) + `</h1><p>` +
			template.HTMLEscapeString(v.T["searchText"]) + `</p><sitetools-search></sitetools-search>`)
		if err := s.put(s.pages, p, v); err != nil {
			return err
		}
	}
	for _, sec := range sections {
		v := s.view(byPath, sections, sec, "")
		v.Title = v.T["notFoundTitle"]
		v.Body = template.HTML(`<h1>` + template.HTMLEscapeString(v.T["notFoundTitle"]) + `</h1><p>` +
			template.HTMLEscapeString(v.T["notFoundText"]) + `</p><p><a href="` + template.HTMLEscapeString(sec) + `">` +
			template.HTMLEscapeString(v.T["notFoundHome"]) + `</a></p>`)
		if err := s.put(s.notFound, sec, v); err != nil {
			return err
		}
	}
	return nil
}

func (s *Site) put(m map[string]*Page, key string, v pageView) error {
	v.FullTitle = v.Title
	if v.SiteName != "" && !strings.Contains(v.Title, v.SiteName) {
		v.FullTitle = v.Title + " · " + v.SiteName
	}
	var buf bytes.Buffer
	if err := layout.ExecuteTemplate(&buf, "layout.html", v); err != nil {
		return fmt.Errorf("server: render %s: %w", key, err)
	}
	m[key] = &Page{Body: buf.Bytes(), ETag: etagOf(buf.Bytes())}
	return nil
}

// findSections returns the site's root "/" and its language roots: top-level folders
// whose index page is in another language than the root's (e.g. "/de/").
func (s *Site) findSections(byPath map[string]*sourcePage) []string {
	out := []string{"/"}
	for p, page := range byPath {
		if strings.Count(p, "/") == 2 && strings.HasSuffix(p, "/") && page.lang != "" && page.lang != s.rootLang {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

func sectionOf(p string, sections []string) string {
	best := "/"
	for _, sec := range sections {
		if strings.HasPrefix(p, sec) && len(sec) > len(best) {
			best = sec
		}
	}
	return best
}

// view is the frame of a page in section sec: language, site name, navigation.
func (s *Site) view(byPath map[string]*sourcePage, sections []string, sec, current string) pageView {
	lang := s.rootLang
	home := byPath[sec]
	if home != nil && home.lang != "" {
		lang = home.lang
	}
	v := pageView{Lang: lang, Home: sec, T: uiText(lang), ContactPath: "/contact"}
	if root := byPath["/"]; root != nil {
		v.SiteName = cmp.Or(root.heading, root.title)
	}
	if home != nil {
		v.SiteName = cmp.Or(home.heading, v.SiteName)
	}
	if _, ok := byPath[sec+"contact"]; ok {
		v.ContactPath = sec + "contact"
	}
	for _, p := range []string{sec + guideName, "/" + guideName} {
		if _, ok := byPath[p]; ok {
			v.GuidePath = p
			break
		}
	}
	// The contact form's topics are the contact page's own (its front matter's topics).
	if contact := byPath[v.ContactPath]; contact != nil {
		v.Topics = contact.topics
	}
	var dirs, pages, legal []link
	for p, page := range byPath {
		rest, ok := strings.CutPrefix(p, sec)
		if !ok || rest == "" || slices.Contains(sections, p) {
			continue
		}
		name := strings.TrimSuffix(rest, "/")
		if strings.Contains(name, "/") {
			continue // not a direct child of the section
		}
		l := link{Href: p, Label: cmp.Or(page.heading, page.title), Current: p == current}
		switch {
		case legalKind[name] != "":
			legal = append(legal, l)
		case strings.HasSuffix(rest, "/"):
			dirs = append(dirs, l)
		default:
			pages = append(pages, l)
		}
	}
	for _, l := range [][]link{dirs, pages, legal} {
		slices.SortFunc(l, func(a, b link) int {
			// The contact page closes the navigation.
			if (path.Base(a.Href) == "contact") != (path.Base(b.Href) == "contact") {
				if path.Base(a.Href) == "contact" {
					return 1
				}
				return -1
			}
			return strings.Compare(a.Href, b.Href)
		})
	}
	v.Nav = append(dirs, pages...)
	v.Footer = legalFooter(byPath, sec, legal)
	for _, other := range sections {
		if other == sec {
			continue
		}
		l := s.rootLang
		if page := byPath[other]; page != nil && page.lang != "" {
			l = page.lang
		}
		v.Languages = append(v.Languages, link{Href: other, Label: languageName(l), Lang: l})
	}
	return v
}

// legalFooter is the legal pages of section sec's footer: its own, and the root's of the
// kinds it has none of in its language.
func legalFooter(byPath map[string]*sourcePage, sec string, legal []link) []link {
	if sec == "/" {
		return legal
	}
	own := map[string]bool{}
	for _, l := range legal {
		own[legalKind[path.Base(l.Href)]] = true
	}
	for p, page := range byPath {
		if kind := legalKind[strings.Trim(p, "/")]; kind != "" && !own[kind] {
			legal = append(legal, link{Href: p, Label: cmp.Or(page.heading, page.title)})
		}
	}
	slices.SortFunc(legal, func(a, b link) int { return strings.Compare(a.Href, b.Href) })
	return legal
}

func isReserved(p string) bool {
	for _, r := range reservedPrefixes {
		r = strings.TrimSuffix(r, "/")
		if p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

func languageName(lang string) string {
	switch lang {
	case "en":
		return "English"
	case "de":
		return "Deutsch"
	case "fr":
		return "Français"
	case "es":
		return "Español"
	case "it":
		return "Italiano"
	case "nl":
		return "Nederlands"
	}
	return strings.ToUpper(lang)
}

// uiText is the layout's own wording in a page's language (English for others).
func uiText(lang string) map[string]string {
	en := map[string]string{
		"skip":             "Skip to content",
		"nav":              "Main",
		"footer":           "Site information",
		"languages":        "Languages",
		"notFoundTitle":    "Page not found",
		"notFoundText":     "There is no page at this address. The chat in the corner can search this site for you.",
		"notFoundHome":     "Go to the home page",
		"searchTitle":      "Search",
		"searchText":       "Results appear as you type. Press Enter to search by meaning as well; Ctrl K or / opens the search on every page.",
		"formHeading":      "Send us a message",
		"formNote":         "This demo form sends nothing anywhere: submitting it only shows a confirmation on this page.",
		"formName":         "Name (required)",
		"formEmail":        "Email (required)",
		"formOrganisation": "Organisation (optional)",
		"formTopic":        "Topic",
		"formMessage":      "Message (required, up to 2,000 characters)",
		"formTopicNone":    "Choose a topic",
		"formRequired":     "Please fill in this field.",
		"formSend":         "Send",
		"formSent":         "Thank you. This demo form sent nothing: your message is still only on this page.",
	}
	if lang == "de" {
		return map[string]string{
			"skip":             "Zum Inhalt springen",
			"nav":              "Hauptnavigation",
			"footer":           "Informationen zur Website",
			"languages":        "Sprachen",
			"notFoundTitle":    "Seite nicht gefunden",
			"notFoundText":     "Unter dieser Adresse gibt es keine Seite. Der Chat in der Ecke kann die Website für Sie durchsuchen.",
			"notFoundHome":     "Zur Startseite",
			"searchTitle":      "Suche",
			"searchText":       "Ergebnisse erscheinen schon beim Tippen. Mit Enter sucht die Website auch nach der Bedeutung; Strg K oder / öffnet die Suche auf jeder Seite.",
			"formHeading":      "Schreiben Sie uns",
			"formNote":         "Dieses Demo-Formular sendet nichts: Beim Absenden erscheint nur eine Bestätigung auf dieser Seite.",
			"formName":         "Name (Pflichtfeld)",
			"formEmail":        "E-Mail-Adresse (Pflichtfeld)",
			"formOrganisation": "Organisation (freiwillig)",
			"formTopic":        "Thema",
			"formMessage":      "Nachricht (Pflichtfeld, bis zu 2.000 Zeichen)",
			"formTopicNone":    "Thema wählen",
			"formRequired":     "Bitte füllen Sie dieses Feld aus.",
			"formSend":         "Senden",
			"formSent":         "Danke. Dieses Demo-Formular hat nichts gesendet: Ihre Nachricht ist weiterhin nur auf dieser Seite.",
		}
	}
	return en
}

// pagePaths are the URL paths of the site's pages, sorted.
// PagePaths are the URL paths of the pages, for the routes.
func (s *Site) PagePaths() []string {
	out := make([]string, 0, len(s.pages))
	for p := range s.pages {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}
