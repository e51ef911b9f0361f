package content

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sitetools/sitetools/internal/pdftext"
	"github.com/sitetools/sitetools/internal/pdftext/pdftexttest"
)

var testPriceList = pdftexttest.Document("Price list 2026", "en-GB",
	"Maintenance plans\n\nThe Harbour plan costs 1,290 € a month.",
	"",
	"Training for editors: 480 € a day, in Munich or at your office.")

func TestParsePDF(t *testing.T) {
	doc, err := ParsePDF(context.Background(), testPriceList, "https://site.example/files/prices.pdf", nil)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Title != "Price list 2026" || doc.Lang != "en" || doc.Path != "/files/prices.pdf" {
		t.Errorf("title %q, lang %q, path %q", doc.Title, doc.Lang, doc.Path)
	}
	var anchors []string
	for _, s := range doc.Sections {
		anchors = append(anchors, s.Anchor)
	}
	if diff := cmp.Diff([]string{"page=1", "page=3"}, anchors); diff != "" {
		t.Errorf("anchors (-want +got):\n%s", diff)
	}
	if want := "Maintenance plans\n\nThe Harbour plan costs 1,290 € a month."; doc.Sections[0].Text != want {
		t.Errorf("page 1 = %q; want %q", doc.Sections[0].Text, want)
	}
	chunks := ChunkDocument(doc, ChunkOptions{})
	if len(chunks) != 2 || chunks[1].Anchor != "page=3" || !strings.Contains(chunks[1].Text, "480 €") {
		t.Errorf("chunks %+v", chunks)
	}
	_, err = ParsePDF(context.Background(), pdftexttest.Encrypted(), "https://site.example/secret.pdf", nil)
	var rej *RejectedError
	if !errors.As(err, &rej) || !errors.Is(err, pdftext.ErrEncrypted) || rej.URL != "https://site.example/secret.pdf" {
		t.Errorf("encrypted: %v", err)
	}
}

func TestPDFParagraphs(t *testing.T) {
	got := pdfParagraphs("Preise\nUnsere Wartungs-\npakete halten eine Website\nsicher und schnell, jeden Tag.\n\nE-\nMail genügt.")
	if want := "Preise\n\nUnsere Wartungspakete halten eine Website sicher und schnell, jeden Tag.\n\nE-Mail genügt."; got != want {
		t.Errorf("got %q; want %q", got, want)
	}
}

func TestExtractLinks(t *testing.T) {
	page := `<html><body><a href="/files/prices.pdf#page=2">Prices</a> <a href="files/Terms.PDF">terms</a>
<a href="https://other.example/x.pdf">elsewhere</a> <a href="/files/prices.pdf">again</a> <a href="/about">about</a>
<a href="http://site.example/insecure.pdf">http</a></body></html>`
	doc, err := ParseHTML([]byte(page), "https://site.example/de/")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"https://site.example/files/prices.pdf", "https://site.example/de/files/Terms.PDF"}
	if diff := cmp.Diff(want, doc.Links); diff != "" {
		t.Errorf("links (-want +got):\n%s", diff)
	}
}

// TestCrawlPDFs: PDFs are fetched as pages are (conditionally, within the size cap);
// bad ones are refused one by one with their reason, and the good pages are all read.
func TestCrawlPDFs(t *testing.T) {
	files := map[string][]byte{
		"/prices.pdf":    testPriceList,
		"/encrypted.pdf": pdftexttest.Encrypted(),
		"/truncated.pdf": pdftexttest.Truncated(),
		"/objects.pdf":   pdftexttest.ManyObjects(100_000),
		"/huge.pdf":      make([]byte, MaxPDFBytes+1),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte(crawlTestPage("Home")))
			return
		}
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "application/pdf")
		w.Header().Set("ETag", `"v1"`)
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	var targets []Target
	for _, p := range []string{"/", "/prices.pdf", "/encrypted.pdf", "/truncated.pdf", "/objects.pdf", "/huge.pdf"} {
		targets = append(targets, Target{URL: srv.URL + p})
	}
	docs := map[string]*Document{}
	c := &Crawler{IgnoreRobots: true}
	st, err := c.FetchTargets(context.Background(), targets, func(d *Document) error { docs[d.Path] = d; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 || docs["/prices.pdf"] == nil || docs["/prices.pdf"].ETag != `"v1"` || docs["/prices.pdf"].Sections[1].Anchor != "page=3" {
		t.Fatalf("documents %v", docs)
	}
	reasons := map[string]string{}
	for _, r := range st.Rejected {
		reasons[strings.TrimPrefix(r.URL, srv.URL)] = r.Reason
	}
	want := map[string]string{
		"/encrypted.pdf": "encrypted: reading it needs a password",
		"/truncated.pdf": "not a readable PDF (damaged, truncated or not a PDF)",
		"/objects.pdf":   "100000 pages, over the limit of 2000: too many pages",
		"/huge.pdf":      "over the limit of 16777216 bytes for a PDF",
	}
	if diff := cmp.Diff(want, reasons); diff != "" {
		t.Errorf("rejected (-want +got):\n%s", diff)
	}
	if st.Skipped != 4 || st.Failed != 0 || st.Pages != 2 {
		t.Errorf("stats %+v", st)
	}
	st, err = c.FetchTargets(context.Background(), []Target{{URL: srv.URL + "/prices.pdf", ETag: `"v1"`}}, func(d *Document) error {
		if !d.NotModified {
			t.Errorf("a 304 read as %+v", d)
		}
		return nil
	})
	if err != nil || st.NotModified != 1 {
		t.Errorf("conditional: %+v, %v", st, err)
	}
}

func TestWalkDirPDFs(t *testing.T) {
	root := t.TempDir()
	for name, b := range map[string][]byte{
		"index.md":            []byte("# Home\n\nSee [the prices](/files/prices.pdf).\n"),
		"files/prices.pdf":    testPriceList,
		"files/index.pdf":     testPriceList,
		"files/encrypted.pdf": pdftexttest.Encrypted(),
	} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var paths []string
	rejected, err := WalkDirReport(root, "https://site.example", func(d *Document) error {
		paths = append(paths, d.Path)
		if d.Path == "/" && (len(d.Links) != 1 || d.Links[0] != "https://site.example/files/prices.pdf") {
			t.Errorf("links of the home page: %v", d.Links)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/files/index.pdf", "/files/prices.pdf", "/"}, paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
	if len(rejected) != 1 || rejected[0].URL != "https://site.example/files/encrypted.pdf" || !strings.Contains(rejected[0].Reason, "password") {
		t.Errorf("rejected %+v", rejected)
	}
}
