// Package pdftexttest makes PDF files for tests: documents of given pages, and the
// hostile kinds a site may serve (encrypted, truncated, a decompression bomb, a hundred
// thousand objects, deep nesting).
package pdftexttest

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"hash/adler32"
	"math/big"
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

// bomb writes its zlib stream without compressing size bytes: after a sync flush, each
// further MB of blanks compresses to the same bytes (the window holds blanks only), so
// one such block is repeated, and the Adler-32 of the whole is computed, not summed (under
// the race detector, deflating 1 GB takes minutes).
func bomb(size int) []byte {
	prefix := []byte("BT /F1 12 Tf 72 712 Td (a bomb) Tj ET\n")
	blanks := bytes.Repeat([]byte(" "), 1<<20)
	var z bytes.Buffer
	w, _ := flate.NewWriter(&z, flate.BestCompression)
	block := func() []byte {
		at := z.Len()
		_, _ = w.Write(blanks)
		_ = w.Flush()
		return bytes.Clone(z.Bytes()[at:])
	}
	_, _ = w.Write(prefix)
	first := block()
	steady := block()
	if again := block(); !bytes.Equal(steady, again) {
		panic("pdftexttest.Bomb: deflate's blocks of blanks differ")
	}
	at := z.Len()
	_ = w.Close()
	final := bytes.Clone(z.Bytes()[at:])
	n := max(size>>20, 2)
	out := []byte{0x78, 0xda} // zlib, best compression
	out = append(out, first...)
	for range n - 1 {
		out = append(out, steady...)
	}
	out = append(out, final...)
	sum := adler32Combine(adler32.Checksum(prefix), adler32Blanks(int64(n)<<20), int64(n)<<20)
	out = binary.BigEndian.AppendUint32(out, sum)
	return Build(onePage("", stream("/Filter /FlateDecode", out))...)
}

// adler32Blanks is the Adler-32 of n blanks: A = 1 + 32n, B = n + 32·n(n+1)/2, mod 65521.
func adler32Blanks(n int64) uint32 {
	const mod = 65521
	bn := big.NewInt(n)
	a := new(big.Int).Add(big.NewInt(1), new(big.Int).Mul(big.NewInt(32), bn))
	b := new(big.Int).Mul(bn, new(big.Int).Add(bn, big.NewInt(1)))
	b.Div(b, big.NewInt(2)).Mul(b, big.NewInt(32)).Add(b, bn)
	return uint32(b.Mod(b, big.NewInt(mod)).Int64())<<16 | uint32(a.Mod(a, big.NewInt(mod)).Int64())
}

// adler32Combine is the Adler-32 of x then y, from theirs and y's length (zlib's
// adler32_combine).
func adler32Combine(ax, ay uint32, leny int64) uint32 {
	const mod = 65521
	rem := uint64(leny % mod)
	a1, b1 := uint64(ax&0xffff), uint64(ax>>16)
	a2, b2 := uint64(ay&0xffff), uint64(ay>>16)
	a := (a1 + a2 + mod - 1) % mod
	b := (rem*a1%mod + b1 + b2 + mod - rem) % mod
	return uint32(b<<16 | a)
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
