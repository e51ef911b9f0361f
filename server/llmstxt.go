package server

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/sitetools/sitetools/server/web"
	"github.com/sitetools/sitetools/tools"
	"github.com/sitetools/sitetools/tools/sitesearch"
)

// indexPages is what the renderings for agents read of the index
// (internal/postgres.SitePages).
type indexPages interface {
	sitesearch.PageFinder
	// Version changes whenever a page is added, changed or removed.
	Version(ctx context.Context) (string, error)
	// Sections returns the languages whose pages are under a folder of their name.
	Sections(ctx context.Context) ([]string, error)
	// Directory returns at most limit pages under a folder, without those under the
	// folders except, most prominent first, each with the start of its text; and how
	// many there are in all.
	Directory(ctx context.Context, under string, except []string, limit int) ([]sitesearch.StoredPage, int, error)
}

// llmsMaxLinks bounds the pages one llms.txt lists: llmstxt.org asks for a concise file,
// and a site of 100 000 pages must not make one of megabytes (200 links are about 40 KB).
// The most prominent pages come first (the fewest path segments, then the shortest
// path); the tools search the others.
const llmsMaxLinks = 200

// llmsRecheck is how often a replica asks the database whether the index changed while
// it serves a cached llms.txt: a file shows an ingest within this long, and a burst of
// requests costs one small query.
const llmsRecheck = 10 * time.Second

// mimeLLMSTxt is llms.txt's type: Markdown, served as the text file its name says, which
// a browser shows rather than downloads.
const mimeLLMSTxt = "text/plain; charset=utf-8"

// llmsCacheControl lets caches keep llms.txt for five minutes and then revalidate it
// (ETag): it changes only when the index or the tools change.
const llmsCacheControl = "public, max-age=300"

// sectionName is what a language section's folder may be called (pages.lang is an ISO
// 639 code).
var sectionName = regexp.MustCompile(`^[a-z]{2,3}$`)

// llmsFiles caches the llms.txt of each language section of the site, per replica: they
// are built again when the index or the registry changed, and only then.
type llmsFiles struct {
	pages   indexPages
	recheck time.Duration

	mu       sync.Mutex
	checked  time.Time
	index    string               // the index's version when checked
	catalog  string               // the ETag of the catalog the files list
	sections []string             // the index's language sections; nil: not read yet
	files    map[string]*llmsFile // by section: "" /llms.txt, "de" /de/llms.txt
}

type llmsFile struct {
	body []byte
	etag string
}

// errNoSection: the index has no pages under /<lang>/.
var errNoSection = tools.Errorf(tools.CodeNotFound, "this site has no llms.txt here: /llms.txt links those of its languages")

// get returns section's file, built by build (given the index's language sections) when
// the index or the registry changed since. When the database cannot say whether the
// index changed, the file built last is served.
func (f *llmsFiles) get(ctx context.Context, catalog, section string, build func(sections []string) (*llmsFile, error)) (*llmsFile, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.refresh(ctx, catalog); err != nil {
		if cached, ok := f.files[section]; ok {
			return cached, nil
		}
		return nil, err
	}
	if cached, ok := f.files[section]; ok {
		return cached, nil
	}
	if f.sections == nil {
		s, err := f.pages.Sections(ctx)
		if err != nil {
			return nil, err
		}
		f.sections = append([]string{}, s...)
	}
	if section != "" && !slices.Contains(f.sections, section) {
		return nil, errNoSection
	}
	file, err := build(f.sections)
	if err != nil {
		return nil, err
	}
	f.files[section] = file
	return file, nil
}

// refresh forgets the files when the registry changed, or the index (which it asks at
// most every recheck).
func (f *llmsFiles) refresh(ctx context.Context, catalog string) error {
	index := f.index
	if index == "" || time.Since(f.checked) >= f.recheck {
		v, err := f.pages.Version(ctx)
		if err != nil {
			return err
		}
		index, f.checked = v, time.Now()
	}
	if index != f.index || catalog != f.catalog || f.files == nil {
		f.index, f.catalog, f.sections, f.files = index, catalog, nil, map[string]*llmsFile{}
	}
	return nil
}

// llmsTxt handles GET and HEAD of /llms.txt and /:lang/llms.txt: the site for agents in
// the llmstxt.org shape, built from the index and the registry (llmstxt_render.go).
// /llms.txt has the pages outside the language folders and links the llms.txt of each
// language folder (/de/llms.txt), which has that folder's pages.
func (a *App) llmsTxt(c echo.Context) error {
	section := c.Param("lang")
	if c.Path() != "/llms.txt" && !sectionName.MatchString(section) {
		return errNoSection
	}
	ctx := c.Request().Context()
	cat := a.registry.Catalog()
	f, err := a.llms.get(ctx, cat.ETag, section, func(sections []string) (*llmsFile, error) {
		return a.buildLLMS(ctx, cat.Definitions, section, sections)
	})
	if err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set("Cache-Control", llmsCacheControl)
	h.Set("ETag", f.etag)
	h.Set("X-Content-Type-Options", "nosniff")
	if etagMatches(c.Request().Header.Get("If-None-Match"), f.etag) {
		return c.NoContent(http.StatusNotModified)
	}
	h.Set(echo.HeaderContentLength, strconv.Itoa(len(f.body)))
	if c.Request().Method == http.MethodHead {
		h.Set(echo.HeaderContentType, mimeLLMSTxt)
		return c.NoContent(http.StatusOK)
	}
	return c.Blob(http.StatusOK, mimeLLMSTxt, f.body)
}

// buildLLMS reads what section's llms.txt lists from the index and renders it.
func (a *App) buildLLMS(ctx context.Context, defs []tools.Definition, section string, sections []string) (*llmsFile, error) {
	under, except := "/", make([]string, len(sections))
	for i, s := range sections {
		except[i] = "/" + s + "/"
	}
	if section != "" {
		under, except = "/"+section+"/", nil
	}
	listed, total, err := a.pages.Directory(ctx, under, except, llmsMaxLinks)
	if err != nil {
		return nil, err
	}
	d := llmsDoc{lang: section, origin: a.indexOrigin(listed), under: under, pages: listed, total: total, tools: defs}
	if len(listed) > 0 && (listed[0].Path == under || listed[0].Path == strings.TrimSuffix(under, "/")) {
		d.home = &listed[0]
	}
	if d.lang == "" && d.home != nil {
		d.lang = d.home.Lang
	}
	if d.others, err = a.otherLanguages(ctx, d.origin, section, sections); err != nil {
		return nil, err
	}
	body := renderLLMS(d)
	return &llmsFile{body: body, etag: tools.ETag(body)}, nil
}

// otherLanguages links the llms.txt of every language section but section's own, the
// site root's among them when section is one: each named in its language, with the title
// of its home page.
func (a *App) otherLanguages(ctx context.Context, origin, section string, sections []string) ([]llmsLink, error) {
	var out []llmsLink
	add := func(lang, home, file string) error {
		p, err := sitesearch.FindPage(ctx, a.pages, home)
		if err == nil && p == nil && home != "/" {
			p, err = sitesearch.FindPage(ctx, a.pages, strings.TrimSuffix(home, "/"))
		}
		if err != nil {
			return err
		}
		l := llmsLink{url: origin + file}
		if p != nil {
			l.desc, lang = p.Title, cmp.Or(lang, p.Lang)
		}
		l.title = cmp.Or(web.LanguageName(lang), origin+file)
		out = append(out, l)
		return nil
	}
	if section != "" {
		if err := add("", "/", "/llms.txt"); err != nil {
			return nil, err
		}
	}
	for _, s := range sections {
		if s == section {
			continue
		}
		if err := add(s, "/"+s+"/", "/"+s+"/llms.txt"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// indexOrigin is the origin the renderings link the service's own paths on: SITE_URL, or
// else that of the indexed pages; "" (relative links) when neither is known.
func (a *App) indexOrigin(pages []sitesearch.StoredPage) string {
	if a.cfg.SiteURL != "" {
		return a.cfg.SiteURL
	}
	for _, p := range pages {
		if u, err := url.Parse(p.URL); err == nil && u.Scheme != "" && u.Host != "" {
			return u.Scheme + "://" + u.Host
		}
	}
	return ""
}
