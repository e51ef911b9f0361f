package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"mime"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sitetools/sitetools/internal/content"
)

// webFiles are the demo pages' files: their layout, stylesheet and router. The chat
// widget and the WebMCP bridge are bundled from web/widget (widget.go); the relay's
// widget comes from npm, read from WEBMCP_WIDGET_PATH at start-up.
//
//go:embed templates assets
var webFiles embed.FS

// Options configure a Site.
type Options struct {
	PagesDir string // SITE_PAGES_DIR: the Markdown pages; "" serves none
	// WidgetPath is the relay's widget from npm (WEBMCP_WIDGET_PATH); "" looks for it
	// where deploy/dev/browser.sh and the Docker image put it (see widgetCandidates).
	WidgetPath       string
	RelayPort        int    // WEBMCP_RELAY_PORT, which the pages' CSP lets the bridge reach
	OriginTrialToken string // WEBMCP_ORIGIN_TRIAL_TOKEN, sent as Origin-Trial with every page
	// Catalog is the registry's tools as GET /api/chat/tools serves them: the pages' forms
	// are views of them (forms.go). nil: of the browser-local tools only.
	Catalog []byte
	Logger  *slog.Logger
}

// Site is what the public listener serves to browsers: the pages rendered from
// SITE_PAGES_DIR (none when unset), their 404 pages, and the static files.
type Site struct {
	originTrial string           // the Origin-Trial header of every page, if any
	pages       map[string]*Page // by URL path
	notFound    map[string]*Page // by section: "/" and the language roots
	sections    []string
	rootLang    string
	static      map[string]*File // by URL path
	documents   map[string]*File // the PDFs of SITE_PAGES_DIR, by URL path
	csp         string
	forms       map[string]*formTool // the tools the pages' forms may be views of
}

// Page is a rendered page.
type Page struct {
	Body []byte
	ETag string
}

// File is a static file.
type File struct {
	Body        []byte
	ETag        string
	ContentType string
	Immutable   bool // its name carries its content's hash
}

// sourcePage is one Markdown page of SITE_PAGES_DIR.
type sourcePage struct {
	path    string // URL path, as sitesearch maps files: "/", "/blog/", "/services/web-platforms"
	title   string
	heading string // the first level-1 heading
	lang    string
	body    template.HTML
	topics  []string // front matter "topics": the contact form's, on a contact page
	noindex bool     // front matter "noindex": served with a robots meta element saying so
}

// Paths of the service, each with everything below it: a page can never shadow them.
var reservedPrefixes = []string{"/api", "/assets", "/webmcp", "/mcp", "/healthz", "/readyz", "/.well-known/ai-catalog.json", "/.well-known/mcp"}

// Pages under these names go to the footer rather than the main navigation. Each is of
// a kind, whatever its language: a language section's own privacy policy
// (/de/datenschutz) stands for the root's (/privacy) in its footer.
var legalKind = map[string]string{"imprint": "imprint", "impressum": "imprint", "privacy": "privacy", "datenschutz": "privacy", "legal": "legal", "terms": "terms"}

// The page a section offers as its guide to connecting an MCP client through the relay
// (sec + guideName, else the root's): the chat's token card links to it.
const guideName = "try-it"

// Each section has a search page (sec + searchName) unless the site has its own there.
const searchName = "search"

// New loads the pages and static files. A broken page stops start-up: a site that
// silently lost a page would be worse.
func New(o Options) (*Site, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Site{
		pages:       map[string]*Page{},
		notFound:    map[string]*Page{},
		rootLang:    "en",
		static:      map[string]*File{},
		documents:   map[string]*File{},
		csp:         contentSecurityPolicy(o.RelayPort),
		originTrial: o.OriginTrialToken,
	}
	if err := s.loadStatic(o); err != nil {
		return nil, err
	}
	var err error
	if s.forms, err = formTools(o.Catalog); err != nil {
		return nil, err
	}
	if o.PagesDir == "" {
		return s, nil
	}
	pages, err := readPages(o.PagesDir)
	if err != nil {
		return nil, err
	}
	if err := s.render(pages); err != nil {
		return nil, err
	}
	if err := s.loadDocuments(o.PagesDir); err != nil {
		return nil, err
	}
	return s, nil
}

// loadDocuments reads the PDFs of the pages' directory, served at the URL paths the
// index gives them ("files/prices.pdf" → "/files/prices.pdf").
func (s *Site) loadDocuments(dir string) error {
	files, err := content.SiteFiles(dir)
	if err != nil {
		return fmt.Errorf("server: SITE_PAGES_DIR: %w", err)
	}
	for _, rel := range files {
		if strings.ToLower(path.Ext(rel)) != ".pdf" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			return fmt.Errorf("server: SITE_PAGES_DIR: %w", err)
		}
		if len(b) > content.MaxPDFBytes {
			return fmt.Errorf("server: SITE_PAGES_DIR: %s is larger than %d bytes", rel, content.MaxPDFBytes)
		}
		s.documents["/"+rel] = &File{Body: b, ETag: etagOf(b), ContentType: "application/pdf"}
	}
	return nil
}

// Document returns the PDF at a URL path.
func (s *Site) Document(urlPath string) (*File, bool) {
	f, ok := s.documents[urlPath]
	return f, ok
}

// contentSecurityPolicy allows what the pages and the bridge need and nothing else:
// scripts, styles, images and fetches from the site itself, and the WebSocket of the
// visitor's local relay. No inline script or style, no frames, no foreign form targets.
func contentSecurityPolicy(relayPort int) string {
	return strings.Join([]string{
		"default-src 'none'",
		"script-src 'self'",
		"style-src 'self'",
		"img-src 'self'",
		"connect-src 'self' ws://localhost:" + strconv.Itoa(relayPort),
		"form-action 'self'",
		"base-uri 'none'",
		"frame-ancestors 'none'",
	}, "; ")
}

func (s *Site) loadStatic(o Options) error {
	err := fs.WalkDir(webFiles, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := webFiles.ReadFile(p)
		if err != nil {
			return err
		}
		s.addStatic("/"+p, b)
		return nil
	})
	if err != nil {
		return fmt.Errorf("web: assets: %w", err)
	}
	bundle, err := widgetBundle()
	if err != nil {
		return err
	}
	for _, f := range bundle {
		s.addStatic("/webmcp/"+f.name, f.body)
		s.static["/webmcp/"+f.name].Immutable = f.immutable
	}
	if o.WidgetPath != "" {
		b, err := os.ReadFile(o.WidgetPath)
		if err != nil {
			return fmt.Errorf("web: WEBMCP_WIDGET_PATH: %w", err)
		}
		s.addStatic("/webmcp/widget.js", b)
		return nil
	}
	for _, p := range widgetCandidates() {
		if b, err := os.ReadFile(p); err == nil {
			s.addStatic("/webmcp/widget.js", b)
			return nil
		}
	}
	// Without the widget the site works; only the relay connection is unavailable.
	o.Logger.Warn("WebMCP widget not found: visitors cannot connect an MCP client through the relay (run deploy/dev/browser.sh npm, or set WEBMCP_WIDGET_PATH)",
		"looked_in", widgetCandidates())
	return nil
}

// DefaultWidgetPath is where deploy/dev/browser.sh installs the relay's widget, relative
// to the repository's root.
const DefaultWidgetPath = "server/web/node_modules/@jason.today/webmcp/src/webmcp.js"

// widgetCandidates are the places the relay's widget is looked for without
// WEBMCP_WIDGET_PATH, whatever the working directory: beside the binary (a checkout's
// bin/sitetools, or a binary installed with webmcp.js next to it), where the Docker
// image puts it, and under the working directory (go run).
func widgetCandidates() []string {
	var out []string
	if exe, err := os.Executable(); err == nil {
		dir := filepath.Dir(exe)
		out = append(out, filepath.Join(dir, "..", DefaultWidgetPath), filepath.Join(dir, "webmcp.js"))
	}
	return append(out, "/usr/share/sitetools/webmcp.js", DefaultWidgetPath)
}

// staticTypes fixes the content types of the browser files: the host's mime.types
// must not decide them (the CSP and nosniff depend on them).
var staticTypes = map[string]string{
	".js":   "text/javascript; charset=utf-8",
	".mjs":  "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
	".json": "application/json",
	".png":  "image/png",
	".ico":  "image/x-icon",
}

func (s *Site) addStatic(urlPath string, b []byte) {
	ct, ok := staticTypes[path.Ext(urlPath)]
	if !ok {
		ct = mime.TypeByExtension(path.Ext(urlPath))
	}
	if ct == "" {
		ct = "application/octet-stream"
	}
	s.static[urlPath] = &File{Body: b, ETag: etagOf(b), ContentType: ct}
}

func etagOf(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}

// Page returns the page at a URL path.
func (s *Site) Page(urlPath string) (*Page, bool) {
	p, ok := s.pages[urlPath]
	return p, ok
}

// HasPages reports whether the site serves pages at all.
func (s *Site) HasPages() bool { return len(s.pages) > 0 }

// NotFoundPage is the 404 page of the section urlPath is in, in its language.
func (s *Site) NotFoundPage(urlPath string) *Page { return s.notFound[sectionOf(urlPath, s.sections)] }

// File returns the static file at a URL path.
func (s *Site) File(urlPath string) (*File, bool) {
	f, ok := s.static[urlPath]
	return f, ok
}

// CSP is the Content-Security-Policy of every page.
func (s *Site) CSP() string { return s.csp }

// OriginTrial is the Origin-Trial header of every page; "" for none.
func (s *Site) OriginTrial() string { return s.originTrial }

// IsReserved reports whether a URL path belongs to the service, not to a page.
func IsReserved(urlPath string) bool { return isReserved(urlPath) }
