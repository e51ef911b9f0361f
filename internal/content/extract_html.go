package content

import (
	"net/url"
	"strings"
	"unicode"

	"golang.org/x/net/html"
)

const extractLevelAttr = "data-sitesearch-level"

// extractSkip lists elements whose text is never page content.
var extractSkip = map[string]bool{
	"script": true, "style": true, "noscript": true, "template": true, "svg": true, "math": true,
	"iframe": true, "object": true, "embed": true, "canvas": true, "button": true, "select": true,
	"input": true, "textarea": true, "nav": true, "footer": true, "aside": true, "form": true,
	"dialog": true, "head": true,
}

var extractSkipRoles = map[string]bool{
	"navigation": true, "banner": true, "contentinfo": true, "search": true, "complementary": true,
}

// extractBlock lists elements that end the paragraph before them and start a new one.
var extractBlock = map[string]bool{
	"address": true, "article": true, "blockquote": true, "dd": true, "details": true, "div": true,
	"dl": true, "dt": true, "fieldset": true, "figcaption": true, "figure": true, "header": true,
	"hgroup": true, "hr": true, "li": true, "main": true, "ol": true, "p": true, "pre": true,
	"section": true, "summary": true, "table": true, "tbody": true, "tfoot": true, "thead": true,
	"tr": true, "ul": true, "caption": true, "body": true, "html": true,
}

// extractWalker turns an HTML tree into sections of plain text.
type extractWalker struct {
	sections []Section
	cur      Section
	paras    []string
	buf      strings.Builder
	pre      bool   // buf holds preformatted text
	pending  string // id of an empty anchor just before a heading
}

// extractSections splits the text under n at its headings. Outside a
// content root (inContent false, or below <main> or <article>), <header> is
// the site's banner and skipped.
func extractSections(n *html.Node, inContent bool) []Section {
	if n == nil {
		return nil
	}
	w := &extractWalker{}
	w.walk(n, inContent)
	w.endSection()
	return w.sections
}

func (w *extractWalker) walk(n *html.Node, inContent bool) {
	switch n.Type {
	case html.TextNode:
		// Only <br> breaks a line outside <pre>, which is read below.
		w.buf.WriteString(strings.Map(extractNoNewline, n.Data))
		if strings.TrimSpace(n.Data) != "" {
			w.pending = ""
		}
		return
	case html.ElementNode:
	case html.DocumentNode:
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			w.walk(c, inContent)
		}
		return
	default:
		return
	}
	tag := n.Data
	if extractBoilerplate(n, inContent) {
		return
	}
	if tag == "main" || tag == "article" {
		inContent = true
	}
	if lvl := extractHeadingLevel(n); lvl > 0 {
		w.heading(n, lvl)
		return
	}
	switch tag {
	case "br":
		w.buf.WriteByte('\n')
		return
	case "a":
		if id := extractAnchorID(n); id != "" && extractText(n) == "" {
			w.pending = id
			return
		}
	case "td", "th":
		if strings.TrimSpace(w.buf.String()) != "" {
			w.buf.WriteString(" | ")
		}
	case "pre":
		w.flush()
		w.pre = true
		extractEach(n, func(c *html.Node) {
			if c.Type == html.TextNode {
				w.buf.WriteString(c.Data)
			} else if c.Type == html.ElementNode && c.Data == "br" {
				w.buf.WriteByte('\n')
			}
		})
		w.flush()
		return
	}
	block := extractBlock[tag]
	if block {
		w.flush()
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.walk(c, inContent)
	}
	if block {
		w.flush()
	}
}

func (w *extractWalker) heading(n *html.Node, lvl int) {
	w.flush()
	w.endSection()
	anchor := extractAttr(n, "id")
	if anchor == "" {
		// <h2><a id="x"></a>…</h2>, <a id="x"><h2>…</h2></a>, or <a id="x"></a><h2>…</h2>
		extractEach(n, func(c *html.Node) {
			if anchor == "" && c != n && c.Type == html.ElementNode {
				anchor = extractAnchorID(c)
			}
		})
	}
	if anchor == "" && n.Parent != nil && n.Parent.Data == "a" {
		anchor = extractAnchorID(n.Parent)
	}
	if anchor == "" {
		anchor = w.pending
	}
	if anchor == "" {
		// A permalink inside the heading: <a href="#x">#</a>.
		extractEach(n, func(c *html.Node) {
			if h := extractAttr(c, "href"); anchor == "" && c.Data == "a" && strings.HasPrefix(h, "#") && len(h) > 1 {
				anchor, _ = url.PathUnescape(h[1:])
			}
		})
	}
	w.pending = ""
	w.cur = Section{Heading: extractHeadingText(n), Anchor: anchor, Level: lvl}
}

// flush ends the paragraph being collected.
func (w *extractWalker) flush() {
	raw := w.buf.String()
	w.buf.Reset()
	pre := w.pre
	w.pre = false
	var lines []string
	for _, line := range strings.Split(strings.ReplaceAll(raw, "\r\n", "\n"), "\n") {
		if pre {
			line = strings.TrimRightFunc(line, unicode.IsSpace)
		} else {
			line = extractSpace(line)
		}
		if strings.TrimSpace(line) != "" {
			lines = append(lines, line)
		}
	}
	if len(lines) > 0 {
		w.paras = append(w.paras, strings.Join(lines, "\n"))
	}
}

func (w *extractWalker) endSection() {
	w.flush()
	w.cur.Text = strings.Join(w.paras, "\n\n")
	w.paras = nil
	if w.cur.Heading != "" || w.cur.Text != "" {
		w.sections = append(w.sections, w.cur)
	}
	w.cur = Section{}
}

// extractPrune removes what is never page content: scripts, styles, forms,
// navigation, footers, asides, hidden elements, and <header> outside <main>
// and <article> (the site's banner).
func extractPrune(n *html.Node, inContent bool) {
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		if c.Type == html.ElementNode {
			if extractBoilerplate(c, inContent) && c.Data != "head" {
				n.RemoveChild(c)
			} else {
				extractPrune(c, inContent || c.Data == "main" || c.Data == "article")
			}
		}
		c = next
	}
}

func extractBoilerplate(n *html.Node, inContent bool) bool {
	return extractSkip[n.Data] || extractSkipRoles[extractAttr(n, "role")] ||
		extractHasAttr(n, "hidden") || extractAttr(n, "aria-hidden") == "true" ||
		(n.Data == "header" && !inContent)
}

func extractNoNewline(r rune) rune {
	if r == '\n' || r == '\r' {
		return ' '
	}
	return r
}

// extractFindText returns the text of the first element named tag.
func extractFindText(root *html.Node, tag string) string {
	if n := extractFind(root, tag); n != nil {
		return extractHeadingText(n)
	}
	return ""
}

// extractHeadingText is a heading's text without permalink symbols.
func extractHeadingText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			switch {
			case c.Type == html.TextNode:
				b.WriteString(c.Data)
			case c.Type != html.ElementNode || extractSkip[c.Data]:
			case c.Data == "br":
				b.WriteByte(' ')
			default:
				walk(c)
			}
		}
	}
	walk(n)
	return strings.TrimSpace(strings.TrimRight(extractSpace(b.String()), "#¶§🔗"))
}

func extractHeadingLevel(n *html.Node) int {
	if n.Type != html.ElementNode {
		return 0
	}
	if v := extractAttr(n, extractLevelAttr); len(v) == 1 && v[0] >= '1' && v[0] <= '6' {
		return int(v[0] - '0')
	}
	if len(n.Data) == 2 && n.Data[0] == 'h' && n.Data[1] >= '1' && n.Data[1] <= '6' {
		return int(n.Data[1] - '0')
	}
	return 0
}

func extractAnchorID(n *html.Node) string {
	if n.Type != html.ElementNode {
		return ""
	}
	if id := extractAttr(n, "id"); id != "" {
		return id
	}
	if n.Data == "a" {
		return extractAttr(n, "name")
	}
	return ""
}

// extractHTMLMeta finds a page's title in <title> or og:title, its
// language in <html lang>, a content-language meta element or og:locale,
// and whether a robots meta element asks to keep it out of an index.
func extractHTMLMeta(root *html.Node) (title, lang string, noindex bool) {
	var titleTag, ogTitle, contentLang, ogLocale string
	extractEach(root, func(n *html.Node) {
		if n.Type != html.ElementNode {
			return
		}
		switch n.Data {
		case "html":
			if lang == "" {
				lang = extractPrimaryLang(extractAttr(n, "lang"))
			}
		case "title":
			if titleTag == "" && !extractInside(n, "svg") {
				titleTag = extractSpace(extractText(n))
			}
		case "meta":
			content := extractAttr(n, "content")
			switch {
			case strings.EqualFold(extractAttr(n, "property"), "og:title"):
				ogTitle = extractSpace(content)
			case strings.EqualFold(extractAttr(n, "property"), "og:locale"):
				ogLocale = content
			case strings.EqualFold(extractAttr(n, "http-equiv"), "content-language"),
				strings.EqualFold(extractAttr(n, "name"), "language"):
				contentLang = content
			case strings.EqualFold(strings.TrimSpace(extractAttr(n, "name")), "robots"):
				noindex = noindex || robotsNoIndex(content)
			}
		}
	})
	title = titleTag
	if title == "" {
		title = ogTitle
	}
	for _, l := range []string{contentLang, ogLocale} {
		if lang == "" {
			lang = extractPrimaryLang(l)
		}
	}
	return title, lang, noindex
}

// extractPrimaryLang returns the primary language subtag of a BCP 47 tag
// (or a list of them, or a POSIX locale like "de_DE"), lower-cased.
func extractPrimaryLang(tag string) string {
	tag = strings.TrimSpace(tag)
	if i := strings.IndexAny(tag, ",;"); i >= 0 {
		tag = strings.TrimSpace(tag[:i])
	}
	if i := strings.IndexAny(tag, "-_"); i >= 0 {
		tag = tag[:i]
	}
	if len(tag) < 2 || len(tag) > 3 {
		return ""
	}
	for _, r := range tag {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') {
			return ""
		}
	}
	return strings.ToLower(tag)
}

func extractFirstH1(sections []Section) string {
	for _, s := range sections {
		if s.Level == 1 && s.Heading != "" {
			return s.Heading
		}
	}
	return ""
}

func extractHasText(sections []Section) bool {
	for _, s := range sections {
		if s.Text != "" {
			return true
		}
	}
	return false
}

// extractSpace collapses runs of white space to one space and trims the ends.
func extractSpace(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// extractEach calls fn for n and every node below it, in document order.
func extractEach(n *html.Node, fn func(*html.Node)) {
	fn(n)
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		extractEach(c, fn)
	}
}

// extractFind returns the first element named tag, in document order.
func extractFind(n *html.Node, tag string) *html.Node {
	if n.Type == html.ElementNode && n.Data == tag {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := extractFind(c, tag); f != nil {
			return f
		}
	}
	return nil
}

func extractText(n *html.Node) string {
	var b strings.Builder
	extractEach(n, func(c *html.Node) {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	})
	return strings.TrimSpace(b.String())
}

func extractInside(n *html.Node, tag string) bool {
	for p := n.Parent; p != nil; p = p.Parent {
		if p.Type == html.ElementNode && p.Data == tag {
			return true
		}
	}
	return false
}

func extractAttr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val
		}
	}
	return ""
}

func extractHasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return true
		}
	}
	return false
}
