package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"codeberg.org/go-pdf/fpdf"

	"github.com/sitetools/sitetools/internal/pdftext/pdftexttest"
)

const paragraph = "Our maintenance plans keep a website secure and fast. The Starter plan covers updates of the content management system once a month; the Business plan adds uptime monitoring. " +
	"Das Paket Geschäft ergänzt Überwachung der Verfügbarkeit. Größere Änderungen gemäß Aufwand. Preis: 1.290 € netto."

// document is the named test document: core-N are N pages in Helvetica (WinAnsi, as
// many office exports of Western text), ttf-N the same in an embedded TrueType font
// (Identity-H with a ToUnicode map, as LibreOffice and browsers write); the others are
// pdftexttest's hostile files.
func document(name string) []byte {
	var n int
	switch {
	case strings.HasPrefix(name, "core-"):
		fmt.Sscan(strings.TrimPrefix(name, "core-"), &n)
		return write(n, "")
	case strings.HasPrefix(name, "ttf-"):
		fmt.Sscan(strings.TrimPrefix(name, "ttf-"), &n)
		return write(n, dejaVu())
	case name == "encrypted":
		return pdftexttest.Encrypted()
	case name == "truncated":
		return pdftexttest.Truncated()
	case name == "bomb-1GB":
		return pdftexttest.Bomb(1 << 30)
	case name == "objects-100000":
		return pdftexttest.ManyObjects(100_000)
	case name == "deep-100000":
		return pdftexttest.Deep(100_000)
	}
	panic("no document " + name)
}

func write(pages int, ttf string) []byte {
	pdf := fpdf.New("P", "mm", "A4", "")
	tr := pdf.UnicodeTranslatorFromDescriptor("")
	font := "Helvetica"
	if ttf != "" {
		b, err := os.ReadFile(ttf)
		if err != nil {
			panic(err)
		}
		pdf.AddUTF8FontFromBytes("dejavu", "", b)
		font, tr = "dejavu", func(s string) string { return s }
	}
	for i := range pages {
		pdf.AddPage()
		pdf.SetFont(font, "", 16)
		pdf.Cell(0, 10, tr(fmt.Sprintf("Preisliste Seite %d – Page %d", i+1, i+1)))
		pdf.Ln(12)
		pdf.SetFont(font, "", 11)
		for range 4 {
			pdf.MultiCell(0, 5, tr(paragraph), "", "L", false)
			pdf.Ln(2)
		}
	}
	var b bytes.Buffer
	if err := pdf.Output(&b); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// dejaVu is a TrueType font with German letters and €: Debian's, or the one fpdf's
// module ships.
func dejaVu() string {
	for _, p := range []string{"/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	matches, _ := filepath.Glob(filepath.Join(os.Getenv("HOME"), "go/pkg/mod/codeberg.org/go-pdf/fpdf@*/font/DejaVuSansCondensed.ttf"))
	if len(matches) == 0 {
		panic("no DejaVu font: apt-get install fonts-dejavu-core")
	}
	return matches[0]
}
