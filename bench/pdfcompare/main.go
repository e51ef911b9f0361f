// Command pdfcompare compares two ways of reading the text of PDFs in Go without a
// system library, on PDFs it writes: pdftext (PDFium compiled to WebAssembly, run by
// wazero), which sitetools uses, and github.com/ledongthuc/pdf, a pure-Go reader. For
// each document it prints the pages read, the time a document and pages a second, the
// process's peak resident set (each library and document in a process of its own), and
// whether the text holds what was written (German letters, €, the words around a line
// break); then what each does with hostile files. docs/pdf.md has its figures.
//
//	cd bench/pdfcompare && go run .
package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	lpdf "github.com/ledongthuc/pdf"

	"github.com/sitetools/sitetools/internal/pdftext"
)

var libs = []string{"pdftext", "ledongthuc"}

var good = []string{"core-3", "core-200", "ttf-3", "ttf-200"}

var hostile = []string{"encrypted", "truncated", "bomb-1GB", "objects-100000", "deep-100000"}

func main() {
	if len(os.Args) == 3 {
		run(os.Args[1], os.Args[2])
		return
	}
	fmt.Println("| library | document | bytes | pages | per document | pages/s | peak RSS | text |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---|")
	for _, doc := range append(good, hostile...) {
		for _, lib := range libs {
			out, err := child(lib, doc)
			if err != nil {
				out = fmt.Sprintf("| %s | %s | | | | | | %s |", lib, doc, err)
			}
			fmt.Println(out)
		}
	}
}

// child runs one library on one document in a process of its own, for its peak resident
// set, stopped after two minutes.
func child(lib, doc string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, os.Args[0], lib, doc).Output()
	if ctx.Err() != nil {
		return "", fmt.Errorf("still reading after 2 minutes")
	}
	if err != nil {
		return "", fmt.Errorf("crashed: %v", err)
	}
	return strings.TrimSpace(string(out)), nil
}

func run(lib, name string) {
	data := document(name)
	read := readLedongthuc
	if lib == "pdftext" {
		r := pdftext.New(pdftext.Options{})
		read = func(b []byte) ([]string, error) {
			d, err := r.Read(context.Background(), b)
			if err != nil {
				return nil, err
			}
			var out []string
			for _, p := range d.Pages {
				out = append(out, p.Text)
			}
			return out, nil
		}
		_, _ = read(document("core-3")) // PDFium compiled, or loaded from the cache, first
	}
	const rounds = 3
	start := time.Now()
	var pages []string
	var err error
	for range rounds {
		pages, err = read(data)
	}
	per := time.Since(start) / rounds
	text := "error: " + fmt.Sprint(err)
	switch {
	case err == nil && slices.Contains(good, name):
		text = check(strings.Join(pages, "\n"))
	case err == nil:
		text = "read, no error"
	}
	fmt.Printf("| %s | %s | %d | %d | %s | %.0f | %.0f MB | %s |\n", lib, name, len(data), len(pages), per.Round(time.Millisecond),
		float64(len(pages))/per.Seconds(), float64(peakRSS())/(1<<20), text)
}

// check says which of the written phrases the text lacks.
func check(text string) string {
	var missing []string
	for _, want := range []string{"Geschäft", "Größere Änderungen gemäß", "1.290 €", "Seite 1 – Page 1", "content management system"} {
		if !strings.Contains(strings.Join(strings.Fields(text), " "), want) {
			missing = append(missing, fmt.Sprintf("%q", want))
		}
	}
	if len(missing) == 0 {
		return "all there"
	}
	return "lacks " + strings.Join(missing, ", ")
}

func readLedongthuc(b []byte) (pages []string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	r, err := lpdf.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return nil, err
	}
	for i := 1; i <= r.NumPage(); i++ {
		p := r.Page(i)
		if p.V.IsNull() {
			continue
		}
		rows, err := p.GetTextByRow()
		if err != nil {
			return pages, err
		}
		var sb strings.Builder
		for _, row := range rows {
			for _, w := range row.Content {
				sb.WriteString(w.S)
			}
			sb.WriteString("\n")
		}
		pages = append(pages, sb.String())
	}
	return pages, nil
}

func peakRSS() int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			return kb << 10
		}
	}
	return 0
}
