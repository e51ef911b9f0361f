package sitesearch

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	readability "codeberg.org/readeck/go-readability/v2"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"go.yaml.in/yaml/v3"
	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
)

// MaxPageBytes bounds the size of a page the parsers accept: a page larger
// than this is refused rather than truncated, so an index never holds half a page.
const MaxPageBytes = 5 << 20

// ErrPageTooLarge is returned for a page over MaxPageBytes.
var ErrPageTooLarge = errors.New("page larger than 5 MB")

// Document is one page of the site as plain text split at its headings.
type Document struct {
	URL      string // absolute URL of the page
	Path     string // URL path, e.g. "/services/web-platforms", "/" for index, "/blog/" for blog/index
	Title    string
	Lang     string    // BCP 47 primary subtag like "en", "de"; "" if unknown
	Sections []Section // in document order; text before the first heading is a section with empty Heading
}

// Section is the text under one heading, up to the next heading of any level.
type Section struct {
	Heading string
	Anchor  string // the heading's id ("" if none)
	Level   int    // 1–6; 0 for text before the first heading
	Text    string // plain text, paragraphs separated by "\n\n"
}

// ParseMarkdown parses a Markdown page with optional YAML front matter
// (title, lang). The title falls back to the first level-1 heading. Headings
// get GitHub-style ids unless they set one with {#id}.
func ParseMarkdown(src []byte, pageURL string) (*Document, error) {
	if len(src) > MaxPageBytes {
		return nil, fmt.Errorf("sitesearch.ParseMarkdown: %s: %w", pageURL, ErrPageTooLarge)
	}
	// Before parsing: CommonMark turns NUL into U+FFFD, and control bytes never occur
	// inside a UTF-8 sequence, so dropping them here is safe.
	src = bytes.Map(func(r rune) rune {
		if isStrippedControl(r) && r != '\r' {
			return -1
		}
		return r
	}, src)
	doc, err := extractNewDocument(pageURL)
	if err != nil {
		return nil, fmt.Errorf("sitesearch.ParseMarkdown: %w", err)
	}
	fm, body, err := extractFrontMatter(src)
	if err != nil {
		return nil, fmt.Errorf("sitesearch.ParseMarkdown: %s: %w", pageURL, err)
	}
	md := goldmark.New(
		goldmark.WithExtensions(extension.GFM),
		goldmark.WithParserOptions(parser.WithAutoHeadingID(), parser.WithHeadingAttribute()),
		// Raw HTML is kept so its text is indexed; the result is never served.
		goldmark.WithRendererOptions(gmhtml.WithUnsafe()),
	)
	var rendered bytes.Buffer
	pctx := parser.NewContext(parser.WithIDs(&extractGitHubIDs{seen: map[string]int{}}))
	if err := md.Convert(body, &rendered, parser.WithContext(pctx)); err != nil {
		return nil, fmt.Errorf("sitesearch.ParseMarkdown: %s: %w", pageURL, err)
	}
	root, err := html.Parse(&rendered)
	if err != nil {
		return nil, fmt.Errorf("sitesearch.ParseMarkdown: %s: %w", pageURL, err)
	}
	doc.Sections = extractSections(extractFind(root, "body"), true)
	doc.Title = extractSpace(fm.Title)
	if doc.Title == "" {
		doc.Title = extractFirstH1(doc.Sections)
	}
	doc.Lang = extractPrimaryLang(fm.Lang)
	if doc.Lang == "" {
		doc.Lang = extractPrimaryLang(fm.Language)
	}
	return cleanDocument(doc), nil
}

// ParseHTML parses an HTML page. The main content comes from readability;
// when readability finds no text, from <main>, <article> or <body> minus
// navigation, headers, footers and asides. The title comes from <title>,
// og:title or the first h1; the language from <html lang>, a
// content-language meta element or og:locale.
func ParseHTML(src []byte, pageURL string) (*Document, error) {
	doc, err := extractHTML(src, pageURL, "")
	if err != nil {
		return nil, fmt.Errorf("sitesearch.ParseHTML: %w", err)
	}
	return doc, nil
}

// extractHTML is ParseHTML with the Content-Type header of an HTTP response,
// which names the character set when the page does not.
func extractHTML(src []byte, pageURL, contentType string) (*Document, error) {
	if len(src) > MaxPageBytes {
		return nil, fmt.Errorf("%s: %w", pageURL, ErrPageTooLarge)
	}
	doc, err := extractNewDocument(pageURL)
	if err != nil {
		return nil, err
	}
	if enc, name, _ := charset.DetermineEncoding(src, contentType); name != "utf-8" {
		if src, err = enc.NewDecoder().Bytes(src); err != nil {
			return nil, fmt.Errorf("%s: decode %s: %w", pageURL, name, err)
		}
	}
	root, err := html.Parse(bytes.NewReader(src))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pageURL, err)
	}
	title, lang := extractHTMLMeta(root)
	// Boilerplate goes before readability sees the page: on a short page,
	// readability may otherwise keep a site header as content.
	extractPrune(root, false)
	// Readability renames h1 to h2; the original level survives in an attribute.
	extractEach(root, func(n *html.Node) {
		if lvl := extractHeadingLevel(n); lvl > 0 {
			n.Attr = append(n.Attr, html.Attribute{Key: extractLevelAttr, Val: string(rune('0' + lvl))})
		}
	})
	u, _ := url.Parse(doc.URL)
	var sections []Section
	if art, err := readability.FromDocument(root, u); err == nil && art.Node != nil {
		sections = extractSections(art.Node, true)
	}
	if !extractHasText(sections) {
		content := extractFind(root, "main")
		if content == nil {
			content = extractFind(root, "article")
		}
		if content == nil {
			content = extractFind(root, "body")
		}
		sections = extractSections(content, true)
	}
	if title == "" {
		title = extractFirstH1(sections)
	}
	if title == "" {
		// Readability drops an h1 it takes for the title.
		title = extractFindText(root, "h1")
	}
	doc.Sections, doc.Title, doc.Lang = sections, title, lang
	return cleanDocument(doc), nil
}

// DocumentFromFile reads file (relative to root, or absolute inside root)
// and parses it by its extension: .md and .markdown as Markdown, .html and
// .htm as HTML. Its URL is baseURL plus the file's path: "index.md" → "/",
// "blog/index.md" → "/blog/", "services/web-platforms.md" →
// "/services/web-platforms", "about.html" → "/about.html", "blog/index.html" → "/blog/".
func DocumentFromFile(root, file, baseURL string) (*Document, error) {
	rel := file
	if filepath.IsAbs(file) {
		r, err := filepath.Rel(root, file)
		if err != nil {
			return nil, fmt.Errorf("sitesearch.DocumentFromFile: %w", err)
		}
		rel = r
	}
	rel = filepath.ToSlash(filepath.Clean(rel))
	if rel == ".." || strings.HasPrefix(rel, "../") || path.IsAbs(rel) {
		return nil, fmt.Errorf("sitesearch.DocumentFromFile: %s is outside %s", file, root)
	}
	pageURL, err := extractFileURL(rel, baseURL)
	if err != nil {
		return nil, fmt.Errorf("sitesearch.DocumentFromFile: %w", err)
	}
	full := filepath.Join(root, filepath.FromSlash(rel))
	info, err := os.Stat(full)
	if err != nil {
		return nil, fmt.Errorf("sitesearch.DocumentFromFile: %w", err)
	}
	if info.Size() > MaxPageBytes {
		return nil, fmt.Errorf("sitesearch.DocumentFromFile: %s: %w", rel, ErrPageTooLarge)
	}
	src, err := os.ReadFile(full)
	if err != nil {
		return nil, fmt.Errorf("sitesearch.DocumentFromFile: %w", err)
	}
	switch strings.ToLower(path.Ext(rel)) {
	case ".md", ".markdown":
		return ParseMarkdown(src, pageURL)
	default:
		return ParseHTML(src, pageURL)
	}
}

// WalkDir calls fn for every Markdown and HTML file under root, in order of
// their slash-separated paths. Hidden files and directories (".name") are
// skipped, and so are symbolic links, which could lead outside root. An
// error from parsing or from fn stops the walk: an ingest that silently
// skipped a page would remove it from the index.
func WalkDir(root, baseURL string, fn func(*Document) error) error {
	if _, err := extractParseBase(baseURL); err != nil {
		return fmt.Errorf("sitesearch.WalkDir: %w", err)
	}
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !extractSupported(d.Name()) {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return fmt.Errorf("sitesearch.WalkDir: %w", err)
	}
	slices.Sort(files)
	for _, f := range files {
		doc, err := DocumentFromFile(root, filepath.FromSlash(f), baseURL)
		if err != nil {
			return err
		}
		if err := fn(doc); err != nil {
			return err
		}
	}
	return nil
}

func extractSupported(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".md", ".markdown", ".html", ".htm":
		return true
	}
	return false
}

func extractParseBase(baseURL string) (*url.URL, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("base URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("base URL %q is not an absolute http(s) URL", baseURL)
	}
	return u, nil
}

// extractFileURL maps a slash-separated file path to the page's URL.
func extractFileURL(rel, baseURL string) (string, error) {
	base, err := extractParseBase(baseURL)
	if err != nil {
		return "", err
	}
	dir, name := path.Split(rel)
	ext := path.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	var p string
	switch {
	case !extractSupported(name):
		return "", fmt.Errorf("%s: not a Markdown or HTML file", rel)
	case stem == "index":
		p = "/" + dir
	case strings.EqualFold(ext, ".md") || strings.EqualFold(ext, ".markdown"):
		p = "/" + dir + stem
	default:
		p = "/" + rel
	}
	u := *base
	u.Path = strings.TrimSuffix(base.Path, "/") + p
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	return u.String(), nil
}

func extractNewDocument(pageURL string) (*Document, error) {
	u, err := url.Parse(pageURL)
	if err != nil {
		return nil, fmt.Errorf("page URL: %w", err)
	}
	p := u.Path
	if p == "" {
		p = "/"
	}
	return &Document{URL: pageURL, Path: p}, nil
}

type extractMeta struct {
	Title    string `yaml:"title"`
	Lang     string `yaml:"lang"`
	Language string `yaml:"language"`
}

// extractFrontMatter splits YAML front matter between "---" lines off the
// start of a Markdown page.
func extractFrontMatter(src []byte) (extractMeta, []byte, error) {
	var fm extractMeta
	src = bytes.TrimPrefix(src, []byte("\ufeff"))
	rest, ok := bytes.CutPrefix(src, []byte("---\n"))
	if !ok {
		if rest, ok = bytes.CutPrefix(src, []byte("---\r\n")); !ok {
			return fm, src, nil
		}
	}
	for off := 0; off < len(rest); {
		line, _, _ := bytes.Cut(rest[off:], []byte("\n"))
		next := off + len(line) + 1
		if t := bytes.TrimRight(line, " \t\r"); string(t) == "---" || string(t) == "..." {
			if err := yaml.Unmarshal(rest[:off], &fm); err != nil {
				return fm, nil, fmt.Errorf("front matter: %w", err)
			}
			if next > len(rest) {
				next = len(rest)
			}
			return fm, rest[next:], nil
		}
		off = next
	}
	// An opening "---" with no closing one is a thematic break, not front matter.
	return fm, src, nil
}

// NewHeadingIDs returns the heading ids the index gives as anchors, for goldmark's
// parser.WithIDs: pages rendered elsewhere then have the anchors search results name.
func NewHeadingIDs() parser.IDs { return &extractGitHubIDs{seen: map[string]int{}} }

// extractGitHubIDs makes heading ids the way GitHub does: the heading's
// rendered text, lower-cased, punctuation removed, each space a hyphen;
// repeats get "-1", "-2"…. Unlike goldmark's default it keeps non-ASCII
// letters ("Über uns" → "über-uns") and ignores link targets and markup.
type extractGitHubIDs struct {
	seen map[string]int
}

func (g *extractGitHubIDs) Generate(value []byte, kind ast.NodeKind) []byte {
	slug := extractSlug(extractInlineText(value))
	if slug == "" {
		slug = "heading"
	}
	base := slug
	for {
		if _, used := g.seen[slug]; !used {
			break
		}
		g.seen[base]++
		slug = fmt.Sprintf("%s-%d", base, g.seen[base])
	}
	g.seen[slug] = 0
	return []byte(slug)
}

func (g *extractGitHubIDs) Put(value []byte) {
	if _, used := g.seen[string(value)]; !used {
		g.seen[string(value)] = 0
	}
}

func extractSlug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(s)) {
		switch {
		case unicode.IsLetter(r), unicode.IsNumber(r), unicode.IsMark(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// extractInlineText renders one line of inline Markdown and returns its text.
func extractInlineText(line []byte) string {
	var buf bytes.Buffer
	if err := goldmark.New(goldmark.WithRendererOptions(gmhtml.WithUnsafe())).Convert(line, &buf); err != nil {
		return string(line)
	}
	root, err := html.Parse(&buf)
	if err != nil {
		return string(line)
	}
	var b strings.Builder
	extractEach(root, func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
	})
	return strings.TrimSpace(b.String())
}

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

// extractHTMLMeta finds a page's title in <title> or og:title, and its
// language in <html lang>, a content-language meta element or og:locale.
func extractHTMLMeta(root *html.Node) (title, lang string) {
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
	return title, lang
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

// cleanDocument removes NUL and the other C0 control characters but tab and newline
// from a page's text: PostgreSQL refuses U+0000 in text, and the others are no text.
func cleanDocument(doc *Document) *Document {
	doc.Title = stripControls(doc.Title)
	for i := range doc.Sections {
		doc.Sections[i].Heading = stripControls(doc.Sections[i].Heading)
		doc.Sections[i].Text = stripControls(doc.Sections[i].Text)
	}
	return doc
}

func stripControls(s string) string {
	if strings.IndexFunc(s, isStrippedControl) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if isStrippedControl(r) {
			return -1
		}
		return r
	}, s)
}

func isStrippedControl(r rune) bool {
	return (r < 0x20 && r != '\t' && r != '\n') || r == 0x7f
}
