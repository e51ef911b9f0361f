package content

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"

	"github.com/sitetools/sitetools/internal/pdftext"
)

// MaxPDFBytes bounds the size of a PDF file the crawler downloads and the walk of a
// directory reads; a larger one is refused.
const MaxPDFBytes = 16 << 20

// MaxLinksPerPage bounds the links to PDFs a page yields (Document.Links).
const MaxLinksPerPage = 100

// Rejection is a document refused for what it holds, not for how it was served: an
// encrypted or broken PDF, one over a cap of the PDF reader. An ingest reports each.
type Rejection struct {
	URL    string
	Reason string
}

// RejectedError is the error of a document refused for what it holds.
type RejectedError struct {
	URL string
	Err error
}

func (e *RejectedError) Error() string { return e.URL + ": " + e.Err.Error() }
func (e *RejectedError) Unwrap() error { return e.Err }

// rejection returns the Rejection err is, if it is one.
func rejection(err error) (Rejection, bool) {
	var rej *RejectedError
	if !errors.As(err, &rej) {
		return Rejection{}, false
	}
	return Rejection{URL: rej.URL, Reason: rej.Err.Error()}, true
}

// ParsePDF reads a PDF with reader (nil: pdftext.Default) into a document of one section
// a page that holds text, each with the anchor "page=N": a chunk of page 3 is cited as
// the file's URL with #page=3, which PDF viewers open at that page. The title is the
// file's /Title, else its first line, else its file name; the language its /Lang.
// A document the reader refuses gives a *RejectedError saying why.
func ParsePDF(ctx context.Context, data []byte, pageURL string, reader *pdftext.Reader) (*Document, error) {
	doc, err := extractNewDocument(pageURL)
	if err != nil {
		return nil, fmt.Errorf("content.ParsePDF: %w", err)
	}
	if len(data) > MaxPDFBytes {
		return nil, &RejectedError{URL: pageURL, Err: fmt.Errorf("%d bytes, over the limit of %d for a PDF", len(data), MaxPDFBytes)}
	}
	if reader == nil {
		reader = pdftext.Default()
	}
	pdf, err := reader.Read(ctx, data)
	if err != nil {
		if ctx.Err() != nil || !pdfRefusal(err) {
			return nil, fmt.Errorf("content.ParsePDF: %s: %w", pageURL, err)
		}
		return nil, &RejectedError{URL: pageURL, Err: err}
	}
	for _, p := range pdf.Pages {
		doc.Sections = append(doc.Sections, Section{Anchor: "page=" + strconv.Itoa(p.Number), Text: pdfParagraphs(p.Text)})
	}
	doc.Title = extractSpace(pdf.Title)
	if doc.Title == "" {
		first, _, _ := strings.Cut(pdf.Pages[0].Text, "\n")
		if first = extractSpace(first); len([]rune(first)) <= 120 {
			doc.Title = first
		}
	}
	if doc.Title == "" {
		doc.Title = path.Base(doc.Path)
	}
	doc.Lang = extractPrimaryLang(pdf.Lang)
	return cleanDocument(doc), nil
}

// pdfRefusal reports whether err is the reader refusing the document (rather than
// failing to start).
func pdfRefusal(err error) bool {
	for _, e := range []error{pdftext.ErrEncrypted, pdftext.ErrMalformed, pdftext.ErrTooManyPages, pdftext.ErrTooMuchText,
		pdftext.ErrMemory, pdftext.ErrTimeout, pdftext.ErrNoText} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// pdfParagraphs makes a page's lines into the paragraphs the chunker splits at. PDFium
// gives lines, not paragraphs: a line ends its paragraph where a blank line follows, or
// where it is shorter than 70% of the page's longest and the next begins with a capital
// or a digit (the last line of a paragraph, a heading, a row of a table). Within a
// paragraph the line breaks become spaces, and a word broken at a line's end by a hyphen
// is joined again: without the hyphen when the next line goes on in lower case, with it
// otherwise ("E-Mail").
func pdfParagraphs(text string) string {
	lines := strings.Split(text, "\n")
	longest := 0
	for _, l := range lines {
		longest = max(longest, utf8.RuneCountInString(strings.TrimSpace(l)))
	}
	var b strings.Builder
	for j, l := range lines {
		l = strings.TrimSpace(l)
		last := j+1 == len(lines)
		switch {
		case l == "":
			continue
		case last:
			b.WriteString(l)
		case strings.HasSuffix(l, "-") && len(l) > 1 && startsLower(lines[j+1]):
			b.WriteString(strings.TrimSuffix(l, "-"))
		case strings.HasSuffix(l, "-") && len(l) > 1 && strings.TrimSpace(lines[j+1]) != "":
			b.WriteString(l) // "E-" and "Mail": a hyphen of the word's own
		case strings.TrimSpace(lines[j+1]) == "" ||
			(10*utf8.RuneCountInString(l) < 7*longest && startsUpperOrDigit(lines[j+1])):
			b.WriteString(l + "\n\n")
		default:
			b.WriteString(l + " ")
		}
	}
	return strings.TrimSpace(b.String())
}

func startsUpperOrDigit(s string) bool {
	r, _ := utf8.DecodeRuneInString(strings.TrimSpace(s))
	return unicode.IsUpper(r) || unicode.IsDigit(r)
}

func startsLower(s string) bool {
	s = strings.TrimSpace(s)
	return s != "" && strings.ToLower(s[:1]) == s[:1] && strings.ToUpper(s[:1]) != s[:1]
}

// isPDF reports whether a response of media type mt for urlPath is a PDF: its type says
// so, or it is sent as bytes of no type under a name that ends in .pdf.
func isPDF(mt, urlPath string) bool {
	switch mt {
	case "application/pdf", "application/x-pdf":
		return true
	case "", "application/octet-stream", "binary/octet-stream":
		return strings.HasSuffix(strings.ToLower(urlPath), ".pdf")
	}
	return false
}

// extractLinks returns the links of root to PDFs on pageURL's own origin (scheme, host
// and port): absolute, without their fragment, each once, in document order, at most
// MaxLinksPerPage. A link is to a PDF when its path ends in .pdf.
func extractLinks(root *html.Node, pageURL string) []string {
	base, err := url.Parse(pageURL)
	if err != nil {
		return nil
	}
	origin := crawlOrigin(pageURL)
	var out []string
	seen := map[string]bool{}
	extractEach(root, func(n *html.Node) {
		if n.Type != html.ElementNode || n.Data != "a" || len(out) >= MaxLinksPerPage {
			return
		}
		u, err := base.Parse(strings.TrimSpace(extractAttr(n, "href")))
		if err != nil || !strings.HasSuffix(strings.ToLower(u.Path), ".pdf") {
			return
		}
		u.Fragment, u.RawFragment, u.User = "", "", nil
		if s := u.String(); crawlOrigin(s) == origin && origin != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	})
	return out
}
