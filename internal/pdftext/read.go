package pdftext

import (
	"fmt"
	"strings"

	"github.com/klippa-app/go-pdfium"
	"github.com/klippa-app/go-pdfium/references"
	"github.com/klippa-app/go-pdfium/requests"
)

// read reads data with inst, within the page and text caps.
func (r *Reader) read(inst pdfium.Pdfium, data []byte) (*Document, error) {
	opened, err := inst.OpenDocument(&requests.OpenDocument{File: &data})
	if err != nil {
		return nil, err
	}
	d := opened.Document
	defer inst.FPDF_CloseDocument(&requests.FPDF_CloseDocument{Document: d}) //nolint:errcheck // the instance goes after
	count, err := inst.FPDF_GetPageCount(&requests.FPDF_GetPageCount{Document: d})
	if err != nil {
		return nil, err
	}
	if count.PageCount > r.opts.MaxPages {
		return nil, fmt.Errorf("%d pages, over the limit of %d: %w", count.PageCount, r.opts.MaxPages, ErrTooManyPages)
	}
	doc := &Document{Count: count.PageCount}
	if t, err := inst.FPDF_GetMetaText(&requests.FPDF_GetMetaText{Document: d, Tag: "Title"}); err == nil {
		doc.Title = strings.TrimSpace(t.Value)
	}
	if l, err := inst.FPDFCatalog_GetLanguage(&requests.FPDFCatalog_GetLanguage{Document: d}); err == nil {
		doc.Lang = strings.TrimSpace(l.Language)
	}
	size := 0
	for i := range count.PageCount {
		text, err := r.pageText(inst, d, i, r.opts.MaxTextBytes-size)
		if err != nil {
			return nil, err
		}
		if text = Clean(text); text != "" {
			size += len(text)
			doc.Pages = append(doc.Pages, Page{Number: i + 1, Text: text})
		}
	}
	if len(doc.Pages) == 0 {
		return nil, ErrNoText
	}
	return doc, nil
}

// pageText is the text of page i (from 0), refused when it holds more than left bytes.
func (r *Reader) pageText(inst pdfium.Pdfium, d references.FPDF_DOCUMENT, i, left int) (string, error) {
	page, err := inst.FPDF_LoadPage(&requests.FPDF_LoadPage{Document: d, Index: i})
	if err != nil {
		return "", err
	}
	defer inst.FPDF_ClosePage(&requests.FPDF_ClosePage{Page: page.Page}) //nolint:errcheck
	tp, err := inst.FPDFText_LoadPage(&requests.FPDFText_LoadPage{Page: requests.Page{ByReference: &page.Page}})
	if err != nil {
		return "", err
	}
	defer inst.FPDFText_ClosePage(&requests.FPDFText_ClosePage{TextPage: tp.TextPage}) //nolint:errcheck
	n, err := inst.FPDFText_CountChars(&requests.FPDFText_CountChars{TextPage: tp.TextPage})
	if err != nil {
		return "", err
	}
	// A character is at least a byte of text: refused before it is copied out.
	if n.Count > left {
		return "", fmt.Errorf("its text is over %d MB: %w", r.opts.MaxTextBytes>>20, ErrTooMuchText)
	}
	if n.Count <= 0 {
		return "", nil
	}
	t, err := inst.FPDFText_GetText(&requests.FPDFText_GetText{TextPage: tp.TextPage, Count: n.Count})
	if err != nil {
		return "", err
	}
	if len(t.Text) > left {
		return "", fmt.Errorf("its text is over %d MB: %w", r.opts.MaxTextBytes>>20, ErrTooMuchText)
	}
	return t.Text, nil
}

// Clean makes PDFium's text of a page plain: line breaks as "\n", trailing blanks and
// the markers of generated hyphens and unknown glyphs gone, at most one blank line in a
// row (a paragraph break).
func Clean(s string) string {
	s = strings.NewReplacer("\r\n", "\n", "\r", "\n", "\u00a0", " ", "\ufffe", "", "\uffff", "", "\x02", "-", "\ufffd", "").Replace(s)
	lines := strings.Split(s, "\n")
	out := lines[:0]
	blank := true
	for _, l := range lines {
		l = strings.TrimRight(l, " \t\f\v")
		if strings.TrimSpace(l) == "" {
			if !blank {
				out = append(out, "")
			}
			blank = true
			continue
		}
		out = append(out, l)
		blank = false
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}
