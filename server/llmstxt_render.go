package server

import (
	"cmp"
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sitetools/sitetools/tools"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// llmsDoc is what one llms.txt says: its language section's pages from the index and the
// registry's tools.
type llmsDoc struct {
	lang   string // of its wording (agentWords)
	origin string // of the links to the service's paths; "" relative
	under  string // the section's folder: "/" or "/de/"
	home   *sitesearch.StoredPage
	pages  []sitesearch.StoredPage // most prominent first, each with the start of its text
	total  int                     // pages in the section, listed or not
	tools  []tools.Definition
	others []llmsLink // the other languages' files
}

type llmsLink struct{ title, url, desc string }

// agentWords are the renderings' own words in a language (English for those it lacks).
type agentWords struct {
	site, summary    string // fallbacks for the title and the summary (of the host)
	intro, partial   string
	mcp, mcpIntro    string
	pages, languages string
	source           string // a page's URL in its Markdown rendering
}

var agentWording = map[string]agentWords{
	"en": {
		site:    "This site",
		summary: "The pages of %s and the tools agents can call on it.",
		intro: "Every page below is linked as Markdown: its address with `.md` appended (`index.html.md` after a final `/`) " +
			"is its text without HTML, and so is its own address asked for with `Accept: text/markdown`.",
		partial:   "This file lists the %d most prominent of %d pages (the fewest path segments first); the tools below search them all.",
		mcp:       "MCP server",
		mcpIntro:  "This site's tools, over the Model Context Protocol at %s (Streamable HTTP, stateless, no authentication) and as JSON at %s (GET lists them with their schemas, POST `{\"name\", \"arguments\"}` calls one):",
		pages:     "Pages",
		languages: "Other languages",
		source:    "Source",
	},
	"de": {
		site:    "Diese Website",
		summary: "Die Seiten von %s und die Werkzeuge, die Agenten dort aufrufen können.",
		intro: "Jede Seite unten ist als Markdown verlinkt: Ihre Adresse mit angehängtem `.md` (`index.html.md` nach einem abschließenden `/`) " +
			"liefert ihren Text ohne HTML, ebenso ihre eigene Adresse, mit `Accept: text/markdown` abgerufen.",
		partial:   "Diese Datei nennt die %d wichtigsten von %d Seiten (die mit den wenigsten Pfadsegmenten zuerst); die Werkzeuge unten durchsuchen alle.",
		mcp:       "MCP-Server",
		mcpIntro:  "Die Werkzeuge dieser Website, über das Model Context Protocol unter %s (Streamable HTTP, zustandslos, ohne Anmeldung) und als JSON unter %s (GET listet sie mit ihren Schemas, POST `{\"name\", \"arguments\"}` ruft eines auf):",
		pages:     "Seiten",
		languages: "Andere Sprachen",
		source:    "Quelle",
	},
}

func wordsFor(lang string) agentWords {
	if w, ok := agentWording[lang]; ok {
		return w
	}
	return agentWording["en"]
}

// renderLLMS writes d in the llmstxt.org shape: the site's name as the H1, a summary as a
// blockquote, a paragraph, then H2 sections: the MCP server with every tool of the
// registry and its description (the one GET /api/chat/tools serves), the pages grouped by
// their first path segment, and the other languages' files.
func renderLLMS(d llmsDoc) []byte {
	w := wordsFor(d.lang)
	var b strings.Builder
	title, summary := d.titleAndSummary(w)
	fmt.Fprintf(&b, "# %s\n\n> %s\n\n%s\n", title, summary, w.intro)
	if d.total > len(d.pages) {
		fmt.Fprintf(&b, "\n"+w.partial+"\n", len(d.pages), d.total)
	}
	fmt.Fprintf(&b, "\n## %s\n\n"+w.mcpIntro+"\n\n", w.mcp,
		markdownLink("/mcp", d.origin+"/mcp"), markdownLink("/api/chat/tools", d.origin+"/api/chat/tools"))
	for _, t := range d.tools {
		fmt.Fprintf(&b, "- `%s`: %s\n", t.Name, oneLine(t.Description))
	}
	for _, g := range groupPages(d.pages, d.under, w.pages) {
		fmt.Fprintf(&b, "\n## %s\n\n", g.title)
		for _, p := range g.pages {
			writeLinkItem(&b, llmsLink{title: cmp.Or(p.Title, p.Path), url: markdownURL(p.URL), desc: lead(p.Body, p.Title)})
		}
	}
	if len(d.others) > 0 {
		fmt.Fprintf(&b, "\n## %s\n\n", w.languages)
		for _, l := range d.others {
			writeLinkItem(&b, l)
		}
	}
	return []byte(b.String())
}

// titleAndSummary are the section's name (its home page's first heading, or title) and
// summary (the home page's first sentence); without a home page, the host's.
func (d llmsDoc) titleAndSummary(w agentWords) (string, string) {
	host := w.site
	if u, err := url.Parse(d.origin); err == nil && u.Host != "" {
		host = u.Host
	}
	title, summary := host, fmt.Sprintf(w.summary, host)
	if d.home == nil {
		return title, summary
	}
	title = cmp.Or(oneLine(d.home.Title), title)
	if h, _, ok := firstHeading(d.home.Body); ok {
		title = h
	}
	return title, cmp.Or(lead(d.home.Body, ""), summary)
}

type pageGroup struct {
	title string
	pages []sitesearch.StoredPage
}

// groupPages groups pages by their first path segment below under: pages at the top
// ("/pricing", and the home page) under main, each folder ("/blog/", "/blog/…") under
// its index page's title, or else its name. Groups keep the pages' order and come in
// the order of their first page, the top first.
func groupPages(pages []sitesearch.StoredPage, under, main string) []pageGroup {
	groups := []pageGroup{{title: main}}
	index := map[string]int{"": 0}
	for _, p := range pages {
		key := ""
		if seg, _, nested := strings.Cut(strings.TrimPrefix(p.Path, under), "/"); nested && strings.HasPrefix(p.Path, under) {
			key = seg
		}
		i, ok := index[key]
		if !ok {
			i = len(groups)
			index[key] = i
			groups = append(groups, pageGroup{title: folderTitle(key)})
			if p.Path == under+key+"/" && p.Title != "" {
				groups[i].title = oneLine(p.Title)
			}
		}
		groups[i].pages = append(groups[i].pages, p)
	}
	if len(groups[0].pages) == 0 {
		groups = groups[1:]
	}
	return groups
}

// folderTitle makes a title of a folder's name: "case-studies" → "Case studies".
func folderTitle(name string) string {
	s := strings.Join(strings.FieldsFunc(name, func(r rune) bool { return r == '-' || r == '_' || unicode.IsSpace(r) }), " ")
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// maxLead bounds a page's description in llms.txt.
const maxLead = 200

// lead is the first sentence of a page's text, on one line and at most maxLead
// characters: its description in llms.txt. It comes from the first paragraph with a
// sentence in it (not a byline or a date), else the first one; headings and table rows
// are skipped. "" when it would only repeat title.
func lead(text, title string) string {
	first := ""
	for _, para := range strings.Split(text, "\n\n") {
		para = strings.TrimSpace(para)
		if para == "" || strings.HasPrefix(para, "#") || strings.Contains(para, " | ") {
			continue
		}
		para = oneLine(strings.TrimLeft(para, "-*• "))
		if strings.ContainsAny(para, ".!?") {
			first = para
			break
		}
		if first == "" {
			first = para
		}
	}
	s := firstSentence(first)
	if strings.EqualFold(s, oneLine(title)) {
		return ""
	}
	return s
}

// minSentence keeps an abbreviation ("Dr.") from ending a first sentence early.
const minSentence = 16

// firstSentence is s up to the end of its first sentence, cut at a word to maxLead
// characters. A sentence ends at '.', '!' or '?' before the end of s or before a word
// that begins with a capital or a digit ("e.g. search" goes on), after at least
// minSentence bytes.
func firstSentence(s string) string {
	for i := minSentence - 1; i < len(s); i++ {
		if strings.IndexByte(".!?", s[i]) < 0 {
			continue
		}
		if i+1 == len(s) {
			break
		}
		if next, _ := utf8.DecodeRuneInString(s[min(i+2, len(s)):]); s[i+1] == ' ' && (unicode.IsUpper(next) || unicode.IsDigit(next)) {
			s = s[:i+1]
			break
		}
	}
	if utf8.RuneCountInString(s) <= maxLead {
		return s
	}
	cut := string([]rune(s)[:maxLead])
	if i := strings.LastIndexByte(cut, ' '); i > maxLead/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:") + "…"
}

// firstHeading returns the level-1 heading text starts with, and the text after it.
func firstHeading(text string) (heading, rest string, ok bool) {
	text = strings.TrimLeft(text, "\n")
	line, rest, _ := strings.Cut(text, "\n")
	if h, found := strings.CutPrefix(line, "# "); found && strings.TrimSpace(h) != "" {
		return strings.TrimSpace(h), strings.TrimLeft(rest, "\n"), true
	}
	return "", text, false
}

// markdownURL is where a page's Markdown rendering is: its URL with ".md" appended, or
// "index.html.md" after a final slash (llmstxt.org's convention). A URL with a query or
// fragment stays as it is.
func markdownURL(pageURL string) string {
	u, err := url.Parse(pageURL)
	if err != nil || u.RawQuery != "" || u.Fragment != "" {
		return pageURL
	}
	if u.Path == "" || strings.HasSuffix(u.Path, "/") {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/index.html"
	}
	u.Path += ".md"
	u.RawPath = ""
	return u.String()
}

func writeLinkItem(b *strings.Builder, l llmsLink) {
	b.WriteString("- " + markdownLink(oneLine(l.title), l.url))
	if desc := oneLine(l.desc); desc != "" && desc != oneLine(l.title) {
		b.WriteString(": " + desc)
	}
	b.WriteString("\n")
}

var (
	linkText = strings.NewReplacer(`\`, `\\`, `[`, `\[`, `]`, `\]`)
	linkDest = strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29", "<", "%3C", ">", "%3E")
)

// markdownLink is [text](dest), each escaped so that neither ends the link early.
func markdownLink(text, dest string) string {
	return "[" + linkText.Replace(text) + "](" + linkDest.Replace(dest) + ")"
}

// oneLine folds s's white space, newlines too, into single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
