package content

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"go.yaml.in/yaml/v3"
	"golang.org/x/net/html"
)

type extractMeta struct {
	Title    string `yaml:"title"`
	Lang     string `yaml:"lang"`
	Language string `yaml:"language"`
	// NoIndex keeps the page out of the index; Robots does the same with the words of
	// a robots meta element ("noindex, follow").
	NoIndex bool   `yaml:"noindex"`
	Robots  string `yaml:"robots"`
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

// extractInline renders a heading's inline Markdown, shared as extractMarkdown is.
var extractInline = goldmark.New(goldmark.WithRendererOptions(gmhtml.WithUnsafe()))

// extractInlineText renders one line of inline Markdown and returns its text.
func extractInlineText(line []byte) string {
	if extractPlainInline(line) {
		return strings.TrimSpace(string(line))
	}
	return extractRenderedText(line)
}

// extractPlainInline reports whether a line is plain text to Markdown, its rendered text
// the line itself: one line that starts with a letter (no list, heading or quote can
// begin there) and holds only letters, digits, spaces and punctuation without a meaning
// in Markdown. Most headings are, and need not be rendered.
func extractPlainInline(line []byte) bool {
	if len(line) == 0 || line[0] < 0x80 && !extractASCIILetter(line[0]) {
		return false
	}
	for _, c := range line {
		if c < 0x80 && !extractASCIILetter(c) && !('0' <= c && c <= '9') && !strings.ContainsRune(" ,.:;?'\"()/%-", rune(c)) {
			return false
		}
	}
	return true
}

func extractASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// extractRenderedText renders one line of inline Markdown and returns its text.
func extractRenderedText(line []byte) string {
	var buf bytes.Buffer
	if err := extractInline.Convert(line, &buf); err != nil {
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
