package content

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseMarkdown(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		want Document
	}{
		{
			name: "front matter, text before the first heading, GitHub-style anchors",
			src: "---\ntitle: Harbour Works\nlang: en-GB\n---\n\nIntro *text*.\n\n# Harbour Works\n\nWe build [websites](/x) that load `fast`.\n\n" +
				"Second   paragraph\nwraps here.\n\n## Über uns & mehr!\n\nText.\n\n## FAQ\n\nOne.\n\n## FAQ\n\nTwo.\n\n## Custom {#my-id}\n\nThree.\n",
			want: Document{Title: "Harbour Works", Lang: "en", Sections: []Section{
				{Text: "Intro text."},
				{Heading: "Harbour Works", Anchor: "harbour-works", Level: 1, Text: "We build websites that load fast.\n\nSecond paragraph wraps here."},
				{Heading: "Über uns & mehr!", Anchor: "über-uns--mehr", Level: 2, Text: "Text."},
				{Heading: "FAQ", Anchor: "faq", Level: 2, Text: "One."},
				{Heading: "FAQ", Anchor: "faq-1", Level: 2, Text: "Two."},
				{Heading: "Custom", Anchor: "my-id", Level: 2, Text: "Three."},
			}},
		},
		{
			name: "title falls back to the first h1, not the first heading",
			src:  "## Before\n\nA.\n\n# The Title\n\nB.\n",
			want: Document{Title: "The Title", Sections: []Section{
				{Heading: "Before", Anchor: "before", Level: 2, Text: "A."},
				{Heading: "The Title", Anchor: "the-title", Level: 1, Text: "B."},
			}},
		},
		{
			name: "anchor ignores link targets and markup in the heading",
			src:  "### [Hybrid search with *pgvector*](/blog/pgvector) `v2`\n\nBody.\n",
			want: Document{Sections: []Section{
				{Heading: "Hybrid search with pgvector v2", Anchor: "hybrid-search-with-pgvector-v2", Level: 3, Text: "Body."},
			}},
		},
		{
			name: "code blocks keep their lines and indentation, lists and tables become paragraphs",
			src: "# Code\n\n```go\nfunc main() {\n\tprintln(\"hi\")\n}\n```\n\n- one\n- two **bold**\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n" +
				"<div>raw <em>html</em> text</div>\n",
			want: Document{Title: "Code", Sections: []Section{
				{Heading: "Code", Anchor: "code", Level: 1, Text: "func main() {\n\tprintln(\"hi\")\n}\n\none\n\ntwo bold\n\na | b\n\n1 | 2\n\nraw html text"},
			}},
		},
		{
			name: "CRLF front matter with language key",
			src:  "---\r\ntitle: \"Kontakt\"\r\nlanguage: de-DE\r\n---\r\nHallo.\r\n",
			want: Document{Title: "Kontakt", Lang: "de", Sections: []Section{{Text: "Hallo."}}},
		},
		{
			name: "an unclosed --- is a thematic break, not front matter",
			src:  "---\nJust text.\n",
			want: Document{Sections: []Section{{Text: "Just text."}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseMarkdown([]byte(tc.src), "https://example.com/page")
			if err != nil {
				t.Fatal(err)
			}
			tc.want.URL, tc.want.Path = "https://example.com/page", "/page"
			if diff := cmp.Diff(&tc.want, got); diff != "" {
				t.Errorf("document (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	big := bytes.Repeat([]byte("word "), MaxPageBytes/5+1)
	for _, tc := range []struct {
		name    string
		parse   func([]byte, string) (*Document, error)
		src     []byte
		pageURL string
		wantErr error // nil: any error
	}{
		{name: "markdown over 5 MB", parse: ParseMarkdown, src: big, pageURL: "https://example.com/x", wantErr: ErrPageTooLarge},
		{name: "html over 5 MB", parse: ParseHTML, src: big, pageURL: "https://example.com/x", wantErr: ErrPageTooLarge},
		{name: "invalid front matter", parse: ParseMarkdown, src: []byte("---\ntitle: [unclosed\n---\nText\n"), pageURL: "https://example.com/x"},
		{name: "unparsable page URL", parse: ParseHTML, src: []byte("<p>text</p>"), pageURL: "http://[::1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := tc.parse(tc.src, tc.pageURL)
			if err == nil {
				t.Fatalf("got a document with %d sections, want an error", len(doc.Sections))
			}
			if tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
		})
	}
}

func TestParseHTML(t *testing.T) {
	noisy, err := os.ReadFile("testdata/page.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		src  []byte
		want Document
	}{
		{
			name: "main content without navigation, footer, aside and scripts",
			src:  noisy,
			want: Document{Title: "Cloud cost review | Harbour Works", Lang: "en", Sections: []Section{
				{Text: "A three-week, read-only review of your AWS, Google Cloud or Azure spend. We look at every line of the bill, compare it with what your systems actually use, and hand you a ranked list of savings with the effort each one takes.\n\n" +
					"Most clients recover the fee within the first two months. We never ask for write access, and we never resell cloud services or take a commission on savings."},
				{Heading: "What you get", Anchor: "what-you-get", Level: 2, Text: "A written report of twenty to forty pages, a spreadsheet with every finding, and a one-hour walkthrough with your engineers and your finance team.\n\n" +
					"Rightsizing of compute and databases.\n\nStorage lifecycle rules and snapshot clean-up.\n\nCommitments and savings plans, only where usage is stable."},
				{Heading: "Pricing", Anchor: "pricing", Level: 2, Text: "The review costs a fixed 9,800 euros plus VAT for up to three cloud accounts. Each further account adds 1,200 euros. Travel is included within Germany."},
				{Heading: "Timeline", Anchor: "timeline", Level: 3, Text: "Week one is access and interviews, week two is analysis, week three is the report and the walkthrough.\n\n" +
					"Week | Work\n\n1 | Access and interviews\n\n2 | Analysis"},
			}},
		},
		{
			name: "short page: fallback to main, og:title, content-language meta",
			src: []byte(`<html><head><meta property="og:title" content="Hello"><meta http-equiv="Content-Language" content="fr-CA, en">` +
				`</head><body><nav>Menu</nav><header>Site</header><main><h2 id="s">Salut <a href="#s">¶</a></h2><p>Bonjour   le<br>monde.</p></main><footer>Foot</footer></body></html>`),
			want: Document{Title: "Hello", Lang: "fr", Sections: []Section{
				{Heading: "Salut", Anchor: "s", Level: 2, Text: "Bonjour le\nmonde."},
			}},
		},
		{
			name: "no main: body minus banner header, hidden elements and role=navigation; title from h1",
			src: []byte(`<html><body><header><h1>Banner</h1></header><div role="navigation">Links</div><div hidden>Secret</div>` +
				`<h1>Page</h1><p>Body text.</p><pre>  indented
code</pre></body></html>`),
			want: Document{Title: "Page", Sections: []Section{
				{Heading: "Page", Level: 1, Text: "Body text.\n\n  indented\ncode"},
			}},
		},
		{
			name: "legacy charset declared in a meta element",
			src:  []byte("<html lang=\"de\"><head><meta charset=\"windows-1252\"><title>Gr\xfc\xdfe</title></head><body><p>Sch\xf6n.</p></body></html>"),
			want: Document{Title: "Grüße", Lang: "de", Sections: []Section{{Text: "Schön."}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseHTML(tc.src, "https://example.com/services/cloud?x=1")
			if err != nil {
				t.Fatal(err)
			}
			tc.want.URL, tc.want.Path = "https://example.com/services/cloud?x=1", "/services/cloud"
			if diff := cmp.Diff(&tc.want, got); diff != "" {
				t.Errorf("document (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDocumentFromFile(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"index.md", "blog/index.md", "services/web-platforms.md", "notes.markdown", "about.html", "blog/index.html", "old/page.htm", "a b/c.md", "x.txt"} {
		p := filepath.Join(root, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		src := "# Title of " + f + "\n\nText.\n"
		if strings.Contains(f, ".htm") {
			src = "<h1>Title of " + f + "</h1><p>Text.</p>"
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, file, base  string
		wantURL, wantPath string
		wantErr           bool
	}{
		{name: "root index", file: "index.md", base: "https://example.com", wantURL: "https://example.com/", wantPath: "/"},
		{name: "directory index", file: "blog/index.md", base: "https://example.com/", wantURL: "https://example.com/blog/", wantPath: "/blog/"},
		{name: "markdown page", file: "services/web-platforms.md", base: "https://example.com", wantURL: "https://example.com/services/web-platforms", wantPath: "/services/web-platforms"},
		{name: ".markdown page", file: "notes.markdown", base: "https://example.com", wantURL: "https://example.com/notes", wantPath: "/notes"},
		{name: "html keeps its path", file: "about.html", base: "https://example.com", wantURL: "https://example.com/about.html", wantPath: "/about.html"},
		{name: "html index is the directory", file: "blog/index.html", base: "https://example.com", wantURL: "https://example.com/blog/", wantPath: "/blog/"},
		{name: ".htm page", file: "old/page.htm", base: "https://example.com", wantURL: "https://example.com/old/page.htm", wantPath: "/old/page.htm"},
		{name: "base URL with a path", file: "services/web-platforms.md", base: "https://example.com/docs/", wantURL: "https://example.com/docs/services/web-platforms", wantPath: "/docs/services/web-platforms"},
		{name: "escaped path", file: "a b/c.md", base: "http://localhost:8080", wantURL: "http://localhost:8080/a%20b/c", wantPath: "/a b/c"},
		{name: "absolute file inside root", file: filepath.Join(root, "about.html"), base: "https://example.com", wantURL: "https://example.com/about.html", wantPath: "/about.html"},
		{name: "unsupported extension", file: "x.txt", base: "https://example.com", wantErr: true},
		{name: "outside the root", file: "../escape.md", base: "https://example.com", wantErr: true},
		{name: "relative base URL", file: "index.md", base: "/docs", wantErr: true},
		{name: "missing file", file: "nope.md", base: "https://example.com", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := DocumentFromFile(root, tc.file, tc.base)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %q, want an error", doc.URL)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if doc.URL != tc.wantURL || doc.Path != tc.wantPath {
				t.Errorf("URL, Path = %q, %q; want %q, %q", doc.URL, doc.Path, tc.wantURL, tc.wantPath)
			}
			if !strings.HasPrefix(doc.Title, "Title of ") {
				t.Errorf("title %q, want the file's h1", doc.Title)
			}
		})
	}
}

func TestWalkDir(t *testing.T) {
	type page struct{ Path, Title, Lang string }
	for _, tc := range []struct {
		name string
		root string
		want []page
	}{
		{
			name: "fixture: sorted, hidden files and directories and non-pages skipped",
			root: "testdata/site",
			want: []page{
				{"/about.html", "Über uns", "de"},
				{"/blog/", "Notes from the workshop", ""},
				{"/", "Harbour Works", "en"},
				{"/services/web-platforms", "Web platforms", ""},
			},
		},
		{
			name: "demo site, the relay guides (noindex) left out",
			root: "../../deploy/demo/site",
			want: []page{
				{"/appointments", "Book an intro call", "en"},
				{"/blog/cloud-bill-40-percent", "How we cut a cloud bill by 40 percent", "en"},
				{"/blog/cookieless-analytics", "GDPR-friendly analytics without cookies", "en"},
				{"/blog/headless-cms-migration", "Migrating a CMS to headless without losing your editors", "en"},
				{"/blog/", "Blog", "en"},
				{"/blog/llm-features-on-a-budget", "Running LLM features on a budget", "en"},
				{"/blog/pgvector-hybrid-search", "Hybrid search with pgvector and PostgreSQL full-text search", "en"},
				{"/blog/wcag-2-2-changes", "WCAG 2.2: what actually changed", "en"},
				{"/case-studies/kestrel-freight", "Case study: Kestrel Freight — from 14 spreadsheets to one warehouse", "en"},
				{"/case-studies/sonnenberg-dental", "Case study: Sonnenberg Dental — privacy engineering for a clinic group", "en"},
				{"/contact", "Contact", "en"},
				{"/de/contact", "Kontakt", "de"},
				{"/de/dateien/preisliste-2026.pdf", "Preisliste 2026", "de"},
				{"/de/datenschutz", "Datenschutzerklärung", "de"},
				{"/de/", "Northwind Lane Consulting — Webplattformen, Daten, Datenschutz und Barrierefreiheit", "de"},
				{"/faq", "Frequently asked questions", "en"},
				{"/files/price-list-2026.pdf", "Price list 2026", "en"},
				{"/imprint", "Imprint (Impressum)", "en"},
				{"/", "Northwind Lane Consulting — web platforms, data, privacy and accessibility", "en"},
				{"/pricing", "Pricing", "en"},
				{"/privacy", "Privacy policy", "en"},
				{"/services/accessibility-audits", "Accessibility audits", "en"},
				{"/services/cloud-cost-review", "Cloud cost review", "en"},
				{"/services/data-engineering", "Data engineering", "en"},
				{"/services/", "Services", "en"},
				{"/services/privacy-engineering", "Privacy engineering", "en"},
				{"/services/web-platforms", "Web platforms", "en"},
				{"/team/aylin-demir", "Aylin Demir", "en"},
				{"/team/", "Team", "en"},
				{"/team/mara-lindqvist", "Mara Lindqvist", "en"},
				{"/team/tobias-reinholt", "Tobias Reinholt", "en"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []page
			err := WalkDir(tc.root, "https://example.com", func(d *Document) error {
				got = append(got, page{d.Path, d.Title, d.Lang})
				if d.URL != "https://example.com"+d.Path {
					t.Errorf("URL %q does not match path %q", d.URL, d.Path)
				}
				if !extractHasText(d.Sections) {
					t.Errorf("%s: no text", d.Path)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("pages (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWalkDirStops(t *testing.T) {
	stop := errors.New("stop")
	for _, tc := range []struct {
		name      string
		root      string
		base      string
		fn        func(*Document) error
		wantErr   error // nil: any error
		wantCalls int
	}{
		{name: "error from fn", root: "testdata/site", base: "https://example.com", fn: func(*Document) error { return stop }, wantErr: stop, wantCalls: 1},
		{name: "missing root", root: "testdata/nope", base: "https://example.com", fn: func(*Document) error { return nil }},
		{name: "bad base URL", root: "testdata/site", base: "example.com", fn: func(*Document) error { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := WalkDir(tc.root, tc.base, func(d *Document) error { calls++; return tc.fn(d) })
			if err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
			if calls != tc.wantCalls {
				t.Errorf("fn called %d times, want %d", calls, tc.wantCalls)
			}
		})
	}
}

func TestExtractPrimaryLang(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"en", "en"}, {"de-DE", "de"}, {"EN_us", "en"}, {" fr-CA, en ", "fr"}, {"gsw", "gsw"},
		{"", ""}, {"x", ""}, {"english", ""}, {"12", ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if got := extractPrimaryLang(tc.in); got != tc.want {
				t.Errorf("extractPrimaryLang(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestExtractStripsControlCharacters: a page with NUL (which PostgreSQL refuses in text)
// and other control characters is indexed without them.
func TestExtractStripsControlCharacters(t *testing.T) {
	md := "---\ntitle: \"Pri\\u0000cing\"\n---\n# Pri\x00ces\n\nOne\x00 day\x07 costs\x1b 1 200 EUR.\tTabs stay.\n"
	html := "<html><head><title>Pri\x00cing</title></head><body><main><h1>Pri\x00ces</h1><p>One\x00 day\x07 costs\x1b 1 200 EUR.</p></main></body></html>"
	for name, parse := range map[string]func() (*Document, error){
		"markdown": func() (*Document, error) { return ParseMarkdown([]byte(md), "https://example.com/pricing") },
		"html":     func() (*Document, error) { return ParseHTML([]byte(html), "https://example.com/pricing") },
	} {
		doc, err := parse()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		all := doc.Title
		for _, s := range doc.Sections {
			all += s.Heading + s.Text
		}
		if strings.ContainsAny(all, "\x00\x07\x1b") {
			t.Errorf("%s: control characters left in %q", name, all)
		}
		if !strings.Contains(all, "One day costs 1 200 EUR.") {
			t.Errorf("%s: text lost: %q", name, all)
		}
	}
}
