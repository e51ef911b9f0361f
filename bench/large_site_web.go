package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"html"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// The large site of the large-site section: n generated pages behind a sitemap index of
// gzip urlsets, each page rendered when it is asked for, with an ETag and a
// Last-Modified and a 304 to a request that names either; the urlsets give each page's
// <lastmod> or, switched, none. Switched to a bomb, the index lists one gzip bomb
// instead.

const (
	largeSeed = 20_261_207
	// largeFilePages is how many pages one urlset lists: 100 000 pages make 3 files, under
	// the protocol's 50 000 each.
	largeFilePages = 40_000
	// largeBombMB is how many MiB of XML the single-layer bomb decodes to: deflate's
	// ratio is at most about 1032:1, so at least 125 KB on the wire.
	largeBombMB = 128
	// largeDoubleBombMB is what the bomb sent with Content-Encoding: gzip decodes to,
	// both layers undone: gigabytes from a few KB on the wire.
	largeDoubleBombMB = 8192
)

// largeModified is when every page was last changed: long before any run, so that a
// <lastmod> is never clamped to the time the sitemap was fetched.
var largeModified = time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)

// Which sitemap the site serves (largeSite.mode).
const (
	largeModeLastmod   = iota // the urlsets, each page with its <lastmod>
	largeModeNoLastmod        // the same urlsets without <lastmod>
	largeModeBomb             // the index lists a gzip bomb, largeBombMB
	largeModeDouble           // the index lists a bomb sent with Content-Encoding: gzip
)

// largeSite is the generated site over HTTP; it counts what it serves.
type largeSite struct {
	srv   *httptest.Server
	n     int
	paths []string
	mode  atomic.Int32
	// bodies counts the pages sent in full, notModified the 304s, conns the connections
	// accepted.
	bodies, notModified, conns atomic.Int64
	bomb, double               []byte // the bombs' bytes as sent
}

// startLargeSite serves the first n generated pages and their sitemaps.
func startLargeSite(n int) (*largeSite, error) {
	s := &largeSite{n: n, paths: make([]string, n)}
	for i := range n {
		s.paths[i] = largePageAt(i).path
	}
	var err error
	if s.bomb, err = gzipBomb(largeBombMB); err != nil {
		return nil, err
	}
	inner, err := gzipBomb(largeDoubleBombMB)
	if err != nil {
		return nil, err
	}
	if s.double, err = gzipBytes(inner); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /sitemap_index.xml", s.index)
	mux.HandleFunc("GET /sitemaps/{file}", s.urlset)
	mux.HandleFunc("GET /bomb.xml.gz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/gzip")
		_, _ = w.Write(s.bomb)
	})
	mux.HandleFunc("GET /bomb-double.xml.gz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/gzip")
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(s.double)
	})
	mux.HandleFunc("GET /", s.page)
	s.srv = httptest.NewUnstartedServer(mux)
	s.srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.srv.Start()
	return s, nil
}

// SitemapURL is the index's URL, serve's INGEST_SITEMAP_URL.
func (s *largeSite) SitemapURL() string { return s.srv.URL + "/sitemap_index.xml" }

func (s *largeSite) files() int { return (s.n + largeFilePages - 1) / largeFilePages }

func (s *largeSite) index(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/xml")
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` + "\n")
	switch s.mode.Load() {
	case largeModeBomb:
		fmt.Fprintf(&b, "<sitemap><loc>%s/bomb.xml.gz</loc></sitemap>\n", s.srv.URL)
	case largeModeDouble:
		fmt.Fprintf(&b, "<sitemap><loc>%s/bomb-double.xml.gz</loc></sitemap>\n", s.srv.URL)
	default:
		for k := range s.files() {
			fmt.Fprintf(&b, "<sitemap><loc>%s/sitemaps/%d.xml.gz</loc></sitemap>\n", s.srv.URL, k+1)
		}
	}
	b.WriteString("</sitemapindex>\n")
	_, _ = io.WriteString(w, b.String())
}

// urlset streams urlset k (from 1), gzip-compressed as it is written.
func (s *largeSite) urlset(w http.ResponseWriter, r *http.Request) {
	k, err := strconv.Atoi(strings.TrimSuffix(r.PathValue("file"), ".xml.gz"))
	if err != nil || k < 1 || k > s.files() {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/gzip")
	zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
	bw := bufio.NewWriter(zw)
	bw.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` + "\n")
	lastmod := s.mode.Load() == largeModeLastmod
	for i := (k - 1) * largeFilePages; i < min(s.n, k*largeFilePages); i++ {
		fmt.Fprintf(bw, "<url><loc>%s%s</loc>", s.srv.URL, s.paths[i])
		if lastmod {
			fmt.Fprintf(bw, "<lastmod>%s</lastmod>", largeLastmod(i).Format(time.RFC3339))
		}
		bw.WriteString("</url>\n")
	}
	bw.WriteString("</urlset>\n")
	_ = bw.Flush()
	_ = zw.Close()
}

// largeLastmod is page i's last change: spread over a year before largeModified.
func largeLastmod(i int) time.Time { return largeModified.Add(-time.Duration(i%8760) * time.Hour) }

// page serves page i, named by the number its path ends with.
func (s *largeSite) page(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	i, err := strconv.Atoi(p[strings.LastIndexByte(p, '-')+1:])
	if err != nil || i < 0 || i >= s.n || s.paths[i] != p {
		http.NotFound(w, r)
		return
	}
	etag := fmt.Sprintf(`"large-%d"`, i)
	modified := largeLastmod(i).Format(http.TimeFormat)
	w.Header().Set("ETag", etag)
	w.Header().Set("Last-Modified", modified)
	inm := r.Header.Get("If-None-Match")
	if inm == etag || (inm == "" && r.Header.Get("If-Modified-Since") == modified) {
		s.notModified.Add(1)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	s.bodies.Add(1)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(largePageAt(i).html())
}

// largePage is one generated page: a title and two or three paragraphs of 90 to 150
// words, one chunk, in the scale sections' vocabulary.
type largePage struct {
	path, title string
	paras       []string
}

func largePageAt(i int) largePage {
	rng := rand.New(rand.NewPCG(largeSeed, uint64(i)))
	topic := rng.IntN(scaleAreas * scaleTopics)
	area := topic / scaleTopics
	sibling := area*scaleTopics + (topic%scaleTopics+1+rng.IntN(scaleTopics-1))%scaleTopics
	p := newScalePicker(rng, scaleVocabulary(), topic, sibling)
	title := fmt.Sprintf("%s %s %s", capitalize(p.content()), p.content(), p.content())
	path := fmt.Sprintf("/area-%02d/topic-%02d/%s-%06d", area, topic%scaleTopics, strings.ReplaceAll(strings.ToLower(title), " ", "-"), i)
	return largePage{path: path, title: title, paras: p.paragraphs(90 + rng.IntN(61))}
}

func (pg largePage) html() []byte {
	var b strings.Builder
	e := html.EscapeString
	fmt.Fprintf(&b, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title></head><body>\n", e(pg.title))
	b.WriteString("<header><nav><a href=\"/\">Home</a> <a href=\"/contact\">Contact</a></nav></header>\n<main><article>\n")
	fmt.Fprintf(&b, "<h1>%s</h1>\n", e(pg.title))
	for _, para := range pg.paras {
		fmt.Fprintf(&b, "<p>%s</p>\n", e(para))
	}
	b.WriteString("</article></main>\n<footer><p>Generated site</p></footer>\n</body></html>\n")
	return []byte(b.String())
}

// gzipBomb is a gzip file of mb members, each 1 MiB of one urlset entry over and over,
// each followed by blanks to 16 KiB (the first member opens the urlset): valid XML of
// small tokens, so that only the protocol's 50 MB a file stops a reader, and nearly as
// compressible as deflate allows (at most about 1032:1; 1.2 KB a member). Each member is
// compressed once and repeated.
func gzipBomb(mb int) ([]byte, error) {
	unit := []byte("<url><loc>/a</loc></url>\n")
	unit = append(unit, bytes.Repeat([]byte(" "), 16<<10-len(unit))...)
	head := []byte(`<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	first, err := gzipBytes(append(head, bytes.Repeat(unit, 63)...))
	if err != nil {
		return nil, err
	}
	member, err := gzipBytes(bytes.Repeat(unit, 64))
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(first)+(mb-1)*len(member))
	out = append(out, first...)
	for range mb - 1 {
		out = append(out, member...)
	}
	return out, nil
}

func gzipBytes(p []byte) ([]byte, error) {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if _, err := zw.Write(p); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
