package pdftext_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sitetools/sitetools/internal/pdftext"
	"github.com/sitetools/sitetools/internal/pdftext/pdftexttest"
)

// reader is shared by the tests: PDFium is compiled once a process (or loaded from the
// user's cache).
var reader = pdftext.New(pdftext.Options{})

func TestReadPages(t *testing.T) {
	data := pdftexttest.Document("Preisliste 2026", "de-DE",
		"Wartungspakete\n\nDas Paket Geschäft kostet 1.290 € im Monat, Größere Änderungen gemäß Aufwand.",
		"",
		"Seite drei: Schulungen für Redakteure, 480 € pro Tag.")
	doc, err := reader.Read(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Title != "Preisliste 2026" || doc.Lang != "de-DE" || doc.Count != 3 {
		t.Errorf("title %q, lang %q, count %d; want Preisliste 2026, de-DE, 3", doc.Title, doc.Lang, doc.Count)
	}
	if len(doc.Pages) != 2 || doc.Pages[0].Number != 1 || doc.Pages[1].Number != 3 {
		t.Fatalf("pages %+v; want pages 1 and 3 (2 is empty)", doc.Pages)
	}
	for _, want := range []string{"Geschäft", "1.290 €", "Größere Änderungen gemäß"} {
		if !strings.Contains(doc.Pages[0].Text, want) {
			t.Errorf("page 1 lacks %q: %q", want, doc.Pages[0].Text)
		}
	}
	if strings.Contains(doc.Pages[0].Text, "\r") || !strings.Contains(doc.Pages[0].Text, "Wartungspakete\n") {
		t.Errorf("page 1 is not plain lines: %q", doc.Pages[0].Text)
	}
}

// TestHostile: every kind of bad document is refused with its own error, quickly, and the
// reader goes on reading good ones.
func TestHostile(t *testing.T) {
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"encrypted", pdftexttest.Encrypted(), pdftext.ErrEncrypted},
		{"truncated", pdftexttest.Truncated(), pdftext.ErrMalformed},
		{"not a pdf", []byte("<html>hello</html>"), pdftext.ErrMalformed},
		{"decompression bomb", pdftexttest.Bomb(1 << 30), pdftext.ErrMemory},
		{"100 000 objects", pdftexttest.ManyObjects(100_000), pdftext.ErrTooManyPages},
		{"nested 100 000 deep", pdftexttest.Deep(100_000), nil},
		{"no text", pdftexttest.ManyObjects(3), pdftext.ErrNoText},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			_, err := reader.Read(context.Background(), c.data)
			t.Logf("%d bytes: %v (%s)", len(c.data), err, time.Since(start).Round(time.Millisecond))
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v; want %v", err, c.want)
			}
			if doc, err := reader.Read(context.Background(), pdftexttest.Document("", "", "still reading")); err != nil || doc.Pages[0].Text != "still reading" {
				t.Fatalf("a good document after it: %v, %+v", err, doc)
			}
		})
	}
}

func TestCaps(t *testing.T) {
	long := strings.Repeat("Ein Satz über Preise und Pakete. ", 60)
	data := pdftexttest.Document("", "", long, long, long)
	small := pdftext.New(pdftext.Options{MaxPages: 2, MaxTextBytes: 1 << 20})
	if _, err := small.Read(context.Background(), data); !errors.Is(err, pdftext.ErrTooManyPages) || !strings.Contains(err.Error(), "3 pages, over the limit of 2") {
		t.Errorf("pages: %v", err)
	}
	tiny := pdftext.New(pdftext.Options{MaxTextBytes: 4_000})
	if _, err := tiny.Read(context.Background(), data); !errors.Is(err, pdftext.ErrTooMuchText) {
		t.Errorf("text: %v", err)
	}
}

// TestTimeout: a document still being read at its deadline is stopped inside PDFium.
func TestTimeout(t *testing.T) {
	hasty := pdftext.New(pdftext.Options{Timeout: 50 * time.Millisecond})
	bomb := pdftexttest.Bomb(1 << 30)
	if _, err := hasty.Read(context.Background(), pdftexttest.Document("", "", "warm")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := hasty.Read(context.Background(), bomb)
	t.Logf("stopped after %s", time.Since(start))
	if !errors.Is(err, pdftext.ErrTimeout) || !strings.Contains(err.Error(), "longer than 50ms") {
		t.Fatalf("err = %v; want the time cap", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("took %s after a deadline of 50ms", took)
	}
	if _, err := hasty.Read(context.Background(), pdftexttest.Document("", "", "after a timeout")); err != nil {
		t.Errorf("after a timeout: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := hasty.Read(ctx, pdftexttest.Document("", "", "cancelled")); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestClean(t *testing.T) {
	got := pdftext.Clean("Titel  \r\nZeile\u00a0eins\r\n\r\n\r\n  \r\nAbsatz\ufffe zwei\r\n")
	if want := "Titel\nZeile eins\n\nAbsatz zwei"; got != want {
		t.Errorf("Clean = %q; want %q", got, want)
	}
}

// BenchmarkRead reads a document of 200 pages of text (about 2 KB a page) and reports
// pages a second; pdftext.New's instance per document is part of each read.
func BenchmarkRead(b *testing.B) {
	pages := make([]string, 200)
	for i := range pages {
		pages[i] = strings.Repeat("Das Paket Geschäft kostet 1.290 € im Monat und umfasst Überwachung, Aktualisierungen und Berichte. ", 20)
	}
	data := pdftexttest.Document("Benchmark", "de", pages...)
	if _, err := reader.Read(context.Background(), data); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := reader.Read(context.Background(), data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(pages)*b.N)/b.Elapsed().Seconds(), "pages/s")
}
