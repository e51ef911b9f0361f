package content

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// sitemapFile is one sitemap file read as a stream of XML tokens: the decoder holds one
// token at a time, never the document.
type sitemapFile struct {
	name    string   // for messages: the URL without its query
	base    *url.URL // what relative <loc>s resolve against
	fetched time.Time
	in      *sitemapInput
	dec     *xml.Decoder
	depth   int // elements open
	closers []io.Closer
	cancel  context.CancelFunc
}

// The limits a file's bytes ran into.
var (
	errSitemapTooLarge = errors.New("sitemap too large")
	errSitemapToken    = errors.New("sitemap token too large")
	errSitemapNesting  = errors.New("sitemap nested too deep")
)

// sitemapMaxNesting bounds how deep a sitemap's elements nest: a <loc> is at depth 3,
// an extension's fields at 4 or 5.
const sitemapMaxNesting = 32

// openSitemap fetches a sitemap file and readies its decoder. Rather than trust names
// and headers, it sniffs gzip: a .xml.gz may come as application/gzip,
// application/octet-stream, or already decoded.
func (c *Crawler) openSitemap(ctx context.Context, sitemapURL string) (*sitemapFile, error) {
	name := sitemapName(sitemapURL)
	base, err := url.Parse(sitemapURL)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, sitemapURL, nil)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	req.Header.Set("User-Agent", c.userAgent())
	resp, err := c.client().Do(req)
	if err != nil {
		cancel()
		return nil, err // the client's errors name the URL
	}
	f := &sitemapFile{name: name, base: base, fetched: c.now(), closers: []io.Closer{resp.Body}, cancel: cancel}
	if resp.StatusCode != http.StatusOK {
		f.close()
		return nil, fmt.Errorf("%s: status %d", name, resp.StatusCode)
	}
	body := bufio.NewReader(resp.Body)
	r := body
	if magic, _ := body.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(body)
		if err != nil {
			f.close()
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		f.closers = append(f.closers, zr)
		r = bufio.NewReader(zr)
	}
	f.in = &sitemapInput{r: r}
	f.dec = xml.NewDecoder(f.in)
	return f, nil
}

// close ends the file's request; it may be called more than once.
func (f *sitemapFile) close() {
	for i := len(f.closers) - 1; i >= 0; i-- {
		f.closers[i].Close()
	}
	f.closers = nil
	f.cancel()
}

// fail is the error of a file that could not be read to its end, naming the file and,
// for a limit, the limit.
func (f *sitemapFile) fail(err error) error {
	switch {
	case errors.Is(err, errSitemapTooLarge):
		return fmt.Errorf("%s: larger than %d bytes uncompressed, the sitemap protocol's limit for one file: split it with a sitemap index", f.name, sitemapMaxBytes)
	case errors.Is(err, errSitemapToken):
		return fmt.Errorf("%s: a run of text, blanks or a comment longer than %d bytes, sitetools' limit for one XML token: not a sitemap", f.name, sitemapMaxToken)
	case errors.Is(err, errSitemapNesting):
		return fmt.Errorf("%s: elements nested deeper than %d levels, sitetools' limit: not a sitemap", f.name, sitemapMaxNesting)
	case errors.Is(err, io.EOF):
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("%s: %w", f.name, err)
}

// next returns the decoder's next token and starts counting the next one's bytes. It
// refuses elements nested deeper than sitemapMaxNesting: the decoder keeps a record of
// each open element.
func (f *sitemapFile) next() (xml.Token, error) {
	t, err := f.dec.Token()
	f.in.mark = f.in.n
	switch t.(type) {
	case xml.StartElement:
		if f.depth++; f.depth > sitemapMaxNesting {
			return nil, errSitemapNesting
		}
	case xml.EndElement:
		f.depth--
	}
	return t, err
}

// root reads up to the root element and returns its local name.
func (f *sitemapFile) root() (string, error) {
	for {
		t, err := f.next()
		if err != nil {
			return "", err
		}
		if se, ok := t.(xml.StartElement); ok {
			return se.Name.Local, nil
		}
	}
}

// sitemapXMLEntry is a <url> or a <sitemap>: its <loc> (empty when longLoc: longer than
// the protocol allows) and <lastmod>.
type sitemapXMLEntry struct {
	loc, lastmod string
	longLoc      bool
}

// entry reads the root's next child named name (by local name: the sitemap namespace,
// or its absence, does not matter), skipping any other; ok is false at the root's end.
func (f *sitemapFile) entry(name string) (e sitemapXMLEntry, ok bool, err error) {
	for {
		t, err := f.next()
		if err != nil {
			return e, false, err
		}
		switch t := t.(type) {
		case xml.StartElement:
			if t.Name.Local == name {
				e, err = f.fields()
				return e, err == nil, err
			}
			if err := f.skip(); err != nil {
				return e, false, err
			}
		case xml.EndElement:
			return e, false, nil
		}
	}
}

// fields reads the children of an entry up to its end: the text of its first <loc> and
// <lastmod>; the others (images, alternates, news) are skipped.
func (f *sitemapFile) fields() (e sitemapXMLEntry, err error) {
	seenLoc, seenLastmod := false, false
	for {
		t, err := f.next()
		if err != nil {
			return e, err
		}
		switch t := t.(type) {
		case xml.StartElement:
			switch {
			case t.Name.Local == "loc" && !seenLoc:
				seenLoc = true
				e.loc, e.longLoc, err = f.text(sitemapMaxLoc)
			case t.Name.Local == "lastmod" && !seenLastmod:
				seenLastmod = true
				e.lastmod, _, err = f.text(sitemapMaxLastmod)
			default:
				err = f.skip()
			}
			if err != nil {
				return e, err
			}
		case xml.EndElement:
			return e, nil
		}
	}
}

// text reads the character data of the element just started, up to its end, and returns
// it, or "" and long true when it is longer than limit (the rest is read, not kept).
// Markup inside it is skipped, as encoding/xml does for a string field.
func (f *sitemapFile) text(limit int) (s string, long bool, err error) {
	var b []byte
	for {
		t, err := f.next()
		if err != nil {
			return "", false, err
		}
		switch t := t.(type) {
		case xml.CharData:
			if !long && len(b)+len(t) > limit {
				long, b = true, nil
			}
			if !long {
				b = append(b, t...)
			}
		case xml.StartElement:
			if err := f.skip(); err != nil {
				return "", false, err
			}
		case xml.EndElement:
			return string(b), long, nil
		}
	}
}

// skip reads to the end of the element just started, as xml.Decoder.Skip does, one
// counted token at a time.
func (f *sitemapFile) skip() error {
	for depth := 1; depth > 0; {
		t, err := f.next()
		if err != nil {
			return err
		}
		switch t.(type) {
		case xml.StartElement:
			depth++
		case xml.EndElement:
			depth--
		}
	}
	return nil
}

// sitemapInput is a file's decoded bytes as the XML decoder reads them (it reads byte by
// byte through io.ByteReader): it stops at sitemapMaxBytes in all, and at sitemapMaxToken
// since the decoder last returned a token (mark), which bounds what the decoder buffers.
type sitemapInput struct {
	r       *bufio.Reader
	n, mark int64
}

// ReadByte implements io.ByteReader.
func (in *sitemapInput) ReadByte() (byte, error) {
	if err := in.check(); err != nil {
		return 0, err
	}
	b, err := in.r.ReadByte()
	if err == nil {
		in.n++
	}
	return b, err
}

// Read implements io.Reader; the decoder uses ReadByte.
func (in *sitemapInput) Read(p []byte) (int, error) {
	if err := in.check(); err != nil {
		return 0, err
	}
	p = p[:min(int64(len(p)), sitemapMaxBytes-in.n, sitemapMaxToken-(in.n-in.mark))]
	n, err := in.r.Read(p)
	in.n += int64(n)
	return n, err
}

// check refuses to read past the limits; a file of exactly sitemapMaxBytes is whole.
func (in *sitemapInput) check() error {
	switch {
	case in.n >= sitemapMaxBytes:
		if _, err := in.r.Peek(1); err != nil {
			return err
		}
		return errSitemapTooLarge
	case in.n-in.mark >= sitemapMaxToken:
		return errSitemapToken
	}
	return nil
}
