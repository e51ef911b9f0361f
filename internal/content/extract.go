package content

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	readability "codeberg.org/readeck/go-readability/v2"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	gmhtml "github.com/yuin/goldmark/renderer/html"
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
	// NoIndex says the page asks to be left out of the index: a robots meta element
	// with noindex or none, or "noindex: true" or "robots: noindex" in a Markdown page's
	// front matter (the crawler skips an X-Robots-Tag: noindex answer before parsing it).
	// The page is still parsed; walks do not yield it.
	NoIndex bool

	// ETag and LastModified are the validators of the response the page came from, as
	// the server sent them ("" when it sent none); a re-crawl sends them back.
	ETag, LastModified string
	// Lastmod is the sitemap's <lastmod> the page was listed with (zero: none).
	Lastmod time.Time
	// Links are the page's links to PDFs on its own origin (absolute, without fragment; at
	// most MaxLinksPerPage): a sync fetches those its sitemap does not list.
	Links []string
	// NotModified says the server answered 304 to a conditional request: the document has
	// its URL, Path and validators, nothing else (no body was read, nothing parsed). The
	// crawler yields such documents only for the targets that carried validators.
	NotModified bool
}

// PlainText is the page as its words stand: the title, then each section's heading and
// text, a line apart.
func (d *Document) PlainText() string {
	var b strings.Builder
	b.WriteString(d.Title)
	for _, s := range d.Sections {
		b.WriteString("\n" + s.Heading + "\n" + s.Text)
	}
	return b.String()
}

// Section is the text under one heading, up to the next heading of any level.
type Section struct {
	Heading string
	Anchor  string // the heading's id ("" if none)
	Level   int    // 1–6; 0 for text before the first heading
	Text    string // plain text, paragraphs separated by "\n\n"
}

// extractMarkdown converts pages to HTML. One converter serves every page: goldmark's
// Markdown is safe for concurrent use (each conversion has a context of its own), and
// setting one up costs more than converting a page with it.
var extractMarkdown = goldmark.New(
	goldmark.WithExtensions(extension.GFM),
	goldmark.WithParserOptions(parser.WithAutoHeadingID(), parser.WithHeadingAttribute()),
	// Raw HTML is kept so its text is indexed; the result is never served.
	goldmark.WithRendererOptions(gmhtml.WithUnsafe()),
)

// ParseMarkdown parses a Markdown page with optional YAML front matter
// (title, lang, noindex). The title falls back to the first level-1 heading. Headings
// get GitHub-style ids unless they set one with {#id}.
func ParseMarkdown(src []byte, pageURL string) (*Document, error) {
	if len(src) > MaxPageBytes {
		return nil, fmt.Errorf("content.ParseMarkdown: %s: %w", pageURL, ErrPageTooLarge)
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
		return nil, fmt.Errorf("content.ParseMarkdown: %w", err)
	}
	fm, body, err := extractFrontMatter(src)
	if err != nil {
		return nil, fmt.Errorf("content.ParseMarkdown: %s: %w", pageURL, err)
	}
	var rendered bytes.Buffer
	pctx := parser.NewContext(parser.WithIDs(&extractGitHubIDs{seen: map[string]int{}}))
	if err := extractMarkdown.Convert(body, &rendered, parser.WithContext(pctx)); err != nil {
		return nil, fmt.Errorf("content.ParseMarkdown: %s: %w", pageURL, err)
	}
	root, err := html.Parse(&rendered)
	if err != nil {
		return nil, fmt.Errorf("content.ParseMarkdown: %s: %w", pageURL, err)
	}
	doc.Sections = extractSections(extractFind(root, "body"), true)
	doc.Links = extractLinks(root, doc.URL)
	doc.Title = extractSpace(fm.Title)
	if doc.Title == "" {
		doc.Title = extractFirstH1(doc.Sections)
	}
	doc.Lang = extractPrimaryLang(fm.Lang)
	if doc.Lang == "" {
		doc.Lang = extractPrimaryLang(fm.Language)
	}
	doc.NoIndex = fm.NoIndex || robotsNoIndex(fm.Robots)
	return cleanDocument(doc), nil
}

// ParseHTML parses an HTML page. The main content comes from readability;
// when readability finds no text, from <main>, <article> or <body> minus
// navigation, headers, footers and asides. The title comes from <title>,
// og:title or the first h1; the language from <html lang>, a
// content-language meta element or og:locale; NoIndex from <meta name="robots">.
func ParseHTML(src []byte, pageURL string) (*Document, error) {
	doc, err := extractHTML(src, pageURL, "")
	if err != nil {
		return nil, fmt.Errorf("content.ParseHTML: %w", err)
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
	title, lang, noindex := extractHTMLMeta(root)
	doc.Links = extractLinks(root, doc.URL)
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
	doc.Sections, doc.Title, doc.Lang, doc.NoIndex = sections, title, lang, noindex
	return cleanDocument(doc), nil
}

// DocumentFromFile reads file (relative to root, or absolute inside root)
// and parses it by its extension: .md and .markdown as Markdown, .html and
// .htm as HTML, .pdf as PDF (ParsePDF, with pdftext.Default). Its URL is baseURL plus
// the file's path: "index.md" → "/", "blog/index.md" → "/blog/",
// "services/web-platforms.md" → "/services/web-platforms", "about.html" →
// "/about.html", "blog/index.html" → "/blog/", "files/prices.pdf" → "/files/prices.pdf".
func DocumentFromFile(root, file, baseURL string) (*Document, error) {
	rel := file
	if filepath.IsAbs(file) {
		r, err := filepath.Rel(root, file)
		if err != nil {
			return nil, fmt.Errorf("content.DocumentFromFile: %w", err)
		}
		rel = r
	}
	rel = filepath.ToSlash(filepath.Clean(rel))
	if rel == ".." || strings.HasPrefix(rel, "../") || path.IsAbs(rel) {
		return nil, fmt.Errorf("content.DocumentFromFile: %s is outside %s", file, root)
	}
	pageURL, err := extractFileURL(rel, baseURL)
	if err != nil {
		return nil, fmt.Errorf("content.DocumentFromFile: %w", err)
	}
	full := filepath.Join(root, filepath.FromSlash(rel))
	info, err := os.Stat(full)
	if err != nil {
		return nil, fmt.Errorf("content.DocumentFromFile: %w", err)
	}
	ext := strings.ToLower(path.Ext(rel))
	if ext == ".pdf" && info.Size() > MaxPDFBytes {
		return nil, &RejectedError{URL: pageURL, Err: fmt.Errorf("%d bytes, over the limit of %d for a PDF", info.Size(), MaxPDFBytes)}
	}
	if ext != ".pdf" && info.Size() > MaxPageBytes {
		return nil, fmt.Errorf("content.DocumentFromFile: %s: %w", rel, ErrPageTooLarge)
	}
	src, err := os.ReadFile(full)
	if err != nil {
		return nil, fmt.Errorf("content.DocumentFromFile: %w", err)
	}
	switch ext {
	case ".pdf":
		return ParsePDF(context.Background(), src, pageURL, nil)
	case ".md", ".markdown":
		return ParseMarkdown(src, pageURL)
	default:
		return ParseHTML(src, pageURL)
	}
}

// WalkDir calls fn for every Markdown, HTML and PDF file under root, in order of
// their slash-separated paths. Hidden files and directories (".name") are
// skipped, and so are symbolic links, which could lead outside root, and
// pages that ask not to be indexed (Document.NoIndex): an ingest then
// removes them from the index if they were in it. An
// error from parsing or from fn stops the walk: an ingest that silently
// skipped a page would remove it from the index. A PDF refused for what it holds
// (encrypted, broken, over a cap) is not such an error: it is left out (WalkDirReport
// returns it).
func WalkDir(root, baseURL string, fn func(*Document) error) error {
	_, err := WalkDirReport(root, baseURL, fn)
	return err
}

// WalkDirReport is WalkDir, and returns the PDFs it left out for what they hold, each
// with its reason.
func WalkDirReport(root, baseURL string, fn func(*Document) error) ([]Rejection, error) {
	if _, err := extractParseBase(baseURL); err != nil {
		return nil, fmt.Errorf("content.WalkDir: %w", err)
	}
	files, err := SiteFiles(root)
	if err != nil {
		return nil, fmt.Errorf("content.WalkDir: %w", err)
	}
	return walkParsed(files, func(f string) (*Document, error) {
		return DocumentFromFile(root, filepath.FromSlash(f), baseURL)
	}, fn)
}

// SiteFiles are the Markdown, HTML and PDF files under root, as slash-separated paths
// relative to it, in order. Hidden files and directories (".name") are skipped, and so
// are symbolic links, which could lead outside root.
func SiteFiles(root string) ([]string, error) {
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
	slices.Sort(files)
	return files, err
}

// walkParsed calls fn with the document of each file, in order, one call at a time, and
// stops at the first error of parse or fn. The files are parsed ahead on up to
// walkWorkers goroutines, at most walkAhead documents ahead of fn, so that parsing the
// next pages overlaps with what fn does with this one.
func walkParsed(files []string, parse func(string) (*Document, error), fn func(*Document) error) ([]Rejection, error) {
	type parsed struct {
		doc *Document
		err error
	}
	workers := min(runtime.GOMAXPROCS(0), walkWorkers, len(files))
	results := make([]chan parsed, len(files))
	for i := range results {
		results[i] = make(chan parsed, 1) // each receives one value: a worker never blocks
	}
	done, window, jobs := make(chan struct{}), make(chan struct{}, walkAhead), make(chan int)
	var wg sync.WaitGroup
	defer func() { close(done); wg.Wait() }()
	wg.Go(func() {
		defer close(jobs)
		for i := range files {
			select {
			case window <- struct{}{}:
			case <-done:
				return
			}
			select {
			case jobs <- i:
			case <-done:
				return
			}
		}
	})
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				doc, err := parse(files[i])
				results[i] <- parsed{doc, err}
			}
		})
	}
	var rejected []Rejection
	for i := range files {
		r := <-results[i]
		<-window
		if rej, ok := rejection(r.err); ok {
			rejected = append(rejected, rej)
			continue
		}
		if r.err != nil {
			return rejected, r.err
		}
		if r.doc.NoIndex {
			continue
		}
		if err := fn(r.doc); err != nil {
			return rejected, err
		}
	}
	return rejected, nil
}

// walkWorkers bounds the goroutines parsing pages for WalkDir, walkAhead how many pages
// it holds parsed before fn takes them.
const (
	walkWorkers = 4
	walkAhead   = 8
)

func extractSupported(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".md", ".markdown", ".html", ".htm", ".pdf":
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
		return "", fmt.Errorf("%s: not a Markdown, HTML or PDF file", rel)
	case strings.EqualFold(ext, ".pdf"):
		p = "/" + rel
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
