package server

import (
	"strings"
	"testing"
	"time"

	"github.com/sitetools/sitetools/tools/sitesearch"
)

// SetLLMSRecheck makes llms.txt ask whether the index changed after d instead of
// llmsRecheck.
func (a *App) SetLLMSRecheck(d time.Duration) {
	a.llms.mu.Lock()
	defer a.llms.mu.Unlock()
	a.llms.recheck = d
}

func TestAcceptsMarkdown(t *testing.T) {
	for _, tc := range []struct {
		accept string
		want   bool
	}{
		{"", false},
		{"*/*", false},
		{"text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8", false},
		{"text/markdown", true},
		{"Text/Markdown", true},
		{"text/markdown; charset=utf-8", true},
		{"text/markdown, text/html;q=0.9, */*;q=0.8", true},
		{"text/html, text/markdown;q=0.5", true},
		{"text/markdown;q=0", false},
		{"text/markdown;q=0.0, text/html", false},
		{"text/markdownish", false},
		{"application/json, text/x-markdown", false},
	} {
		if got := acceptsMarkdown(tc.accept); got != tc.want {
			t.Errorf("acceptsMarkdown(%q) = %v, want %v", tc.accept, got, tc.want)
		}
	}
}

func TestMarkdownSource(t *testing.T) {
	for _, tc := range []struct {
		path, want string
		ok         bool
	}{
		{"/pricing.md", "/pricing", true},
		{"/de/preise.md", "/de/preise", true},
		{"/blog/index.html.md", "/blog/", true},
		{"/blog/index.md", "/blog/", true},
		{"/index.html.md", "/", true},
		{"/blog.md", "/blog", true},
		{"/pricing", "", false},
		{"/notes.mdx", "", false},
	} {
		got, ok := markdownSource(tc.path)
		if got != tc.want || ok != tc.ok {
			t.Errorf("markdownSource(%q) = %q, %v; want %q, %v", tc.path, got, ok, tc.want, tc.ok)
		}
	}
}

func TestMarkdownURL(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"https://site.example/pricing", "https://site.example/pricing.md"},
		{"https://site.example/", "https://site.example/index.html.md"},
		{"https://site.example", "https://site.example/index.html.md"},
		{"https://site.example/blog/", "https://site.example/blog/index.html.md"},
		{"https://site.example/de/über uns", "https://site.example/de/%C3%BCber%20uns.md"},
		{"https://site.example/search?q=x", "https://site.example/search?q=x"},
	} {
		if got := markdownURL(tc.url); got != tc.want {
			t.Errorf("markdownURL(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
}

func TestLead(t *testing.T) {
	long := strings.Repeat("word ", 80) + "end."
	for _, tc := range []struct {
		name, text, title, want string
	}{
		{"first sentence", "# Pricing\n\nWe publish our prices. All in euros.", "Pricing", "We publish our prices."},
		{"a byline is passed over", "# Post\n\nMara Lindqvist, 16 May 2024\n\nMigrating a CMS is hard. Very.", "Post", "Migrating a CMS is hard."},
		{"an abbreviation does not end it", "Dr. Smith works on e.g. search engines here. Then more.", "", "Dr. Smith works on e.g. search engines here."},
		{"table rows and headings are skipped", "## Prices\n\nPackage | Price\n\nAudit | €4,900\n\nAll prices are net.", "", "All prices are net."},
		{"lines fold", "Line one\ncontinues here, and ends now. Next.", "", "Line one continues here, and ends now."},
		{"a list item loses its marker", "- Web platforms — rebuilds and migrations for websites.", "", "Web platforms — rebuilds and migrations for websites."},
		{"long text is cut at a word", long, "", strings.TrimSpace(strings.Repeat("word ", 40)) + "…"},
		{"the title alone is no description", "Contact", "Contact", ""},
		{"nothing", "# Only a heading", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lead(tc.text, tc.title); got != tc.want {
				t.Errorf("lead = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestGroupPages(t *testing.T) {
	page := func(path, title string) sitesearch.StoredPage { return sitesearch.StoredPage{Path: path, Title: title} }
	for _, tc := range []struct {
		name, under string
		pages       []sitesearch.StoredPage
		want        string
	}{
		{"root", "/", []sitesearch.StoredPage{page("/", "Home"), page("/faq", "FAQ"), page("/blog/", "Our blog"),
			page("/pricing", "Pricing"), page("/case-studies/a", "A"), page("/blog/b", "B")},
			"Pages: / /faq /pricing; Our blog: /blog/ /blog/b; Case studies: /case-studies/a"},
		{"a language folder", "/de/", []sitesearch.StoredPage{page("/de", "Start"), page("/de/kontakt", "Kontakt"), page("/de/blog/x", "X")},
			"Pages: /de /de/kontakt; Blog: /de/blog/x"},
		{"no page at the top", "/", []sitesearch.StoredPage{page("/docs/a", "A")}, "Docs: /docs/a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var parts []string
			for _, g := range groupPages(tc.pages, tc.under, "Pages") {
				paths := make([]string, len(g.pages))
				for i, p := range g.pages {
					paths[i] = p.Path
				}
				parts = append(parts, g.title+": "+strings.Join(paths, " "))
			}
			if got := strings.Join(parts, "; "); got != tc.want {
				t.Errorf("groups %q\nwant   %q", got, tc.want)
			}
		})
	}
}

func TestMarkdownLinkEscapes(t *testing.T) {
	got := markdownLink("A [draft] (v2)", "https://site.example/a (b)")
	if want := `[A \[draft\] (v2)](https://site.example/a%20%28b%29)`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
