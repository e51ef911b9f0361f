// Package pdftexttest makes PDF files for tests: documents of given pages, and the
// hostile kinds a site may serve (encrypted, truncated, a decompression bomb, a hundred
// thousand objects, deep nesting).
package pdftexttest

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"strings"
	"sync"
	"time"

	"codeberg.org/go-pdf/fpdf"
)

// Document is a PDF of pages of text in Helvetica (WinAnsi, so German letters and € are
// fine), one string per page, paragraphs separated by "\n\n"; title and lang go into its
// Info dictionary and catalog when not "".
func Document(title, lang string, pages ...string) []byte {
	pdf := fpdf.New("P", "mm", "A4", "")
	pdf.SetCompression(true)
	pdf.SetCreationDate(fixedDate)
	pdf.SetModificationDate(fixedDate)
	tr := pdf.UnicodeTranslatorFromDescriptor("")
	if title != "" {
		pdf.SetTitle(title, true)
	}
	if lang != "" {
		pdf.SetLang(lang)
	}
	for _, page := range pages {
		pdf.AddPage()
		pdf.SetFont("Helvetica", "", 11)
		for _, para := range strings.Split(page, "\n\n") {
			pdf.MultiCell(0, 5.5, tr(para), "", "L", false)
			pdf.Ln(4)
		}
	}
	var b bytes.Buffer
	if err := pdf.Output(&b); err != nil {
		panic("pdftexttest.Document: " + err.Error())
	}
	return b.Bytes()
}

// Encrypted is a PDF that opens only with a password.
func Encrypted() []byte {
	pdf := fpdf.New("P", "mm", "A4", "")
	pdf.SetCreationDate(fixedDate)
	pdf.SetProtection(0, "user-secret", "owner-secret")
	pdf.AddPage()
	pdf.SetFont("Helvetica", "", 12)
	pdf.Cell(0, 10, "A price list behind a password")
	var b bytes.Buffer
	if err := pdf.Output(&b); err != nil {
		panic("pdftexttest.Encrypted: " + err.Error())
	}
	return b.Bytes()
}

// Truncated is the first half of a good PDF, as a download cut short leaves it.
func Truncated() []byte {
	d := Document("Cut short", "en", "This document ends in the middle.", "A second page.")
	return d[:len(d)/2]
}

// Bomb is a one-page PDF whose content stream is about a thousandth of size in zlib and
// inflates to size bytes. Each size is made once a process (1 GB takes seconds).
func Bomb(size int) []byte {
	bombsMu.Lock()
	defer bombsMu.Unlock()
	if b, ok := bombs[size]; ok {
		return b
	}
	bombs[size] = bomb(size)
	return bombs[size]
}

var (
	bombsMu sync.Mutex
	bombs   = map[int][]byte{}
)

func bomb(size int) []byte {
	var z bytes.Buffer
	w, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	_, _ = w.Write([]byte("BT /F1 12 Tf 72 712 Td (a bomb) Tj ET\n"))
	blanks := bytes.Repeat([]byte(" "), 1<<20)
	for range size >> 20 {
		_, _ = w.Write(blanks)
	}
	_ = w.Close()
	return Build(onePage("", stream("/Filter /FlateDecode", z.Bytes()))...)
}

// ManyObjects is a PDF of n empty pages, each an object of its own.
func ManyObjects(n int) []byte {
	objs := []string{"<< /Type /Catalog /Pages 2 0 R >>", ""}
	var kids strings.Builder
	for i := range n {
		fmt.Fprintf(&kids, "%d 0 R ", i+3)
		objs = append(objs, "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>")
	}
	objs[1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", kids.String(), n)
	return Build(objs...)
}

// Deep is a one-page PDF whose page holds arrays nested depth deep, in its dictionary
// and in its content stream.
func Deep(depth int) []byte {
	nest := strings.Repeat("[", depth) + strings.Repeat("]", depth)
	return Build(onePage("/Deep "+nest, stream("", []byte("BT /F1 12 Tf 72 712 Td (deep) Tj ET "+nest)))...)
}

// onePage is the objects of a PDF of one page with content, extra in its dictionary.
func onePage(extra, content string) []string {
	return []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> " + extra + " >>",
		content,
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	}
}

func stream(dict string, data []byte) string {
	return fmt.Sprintf("<< %s /Length %d >>\nstream\n%s\nendstream", dict, len(data), data)
}

// Build writes a PDF of objs, object i+1 being objs[i] and the first the catalog, with a
// correct cross-reference table.
func Build(objs ...string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

// fixedDate makes a document the same bytes on every run.
var fixedDate = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
