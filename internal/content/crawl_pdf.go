package content

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/sitetools/sitetools/internal/pdftext"
)

// readPDF reads the body of a PDF's 200 response, within MaxPDFBytes, and its text with
// the crawler's PDF reader, whose deadline runs from when the reading starts (ctx is
// the crawl's, not the request's). A PDF refused for what it holds is skipped, as a page
// over MaxBytes is, and reported (CrawlStats.Rejected); one that ran out of time failed,
// and keeps its indexed copy until a sync reads it.
func (c *Crawler) readPDF(ctx context.Context, res crawlResult, resp *http.Response) crawlResult {
	if resp.ContentLength > MaxPDFBytes {
		res.reason, res.refused = &RejectedError{URL: res.url, Err: fmt.Errorf("%d bytes, over the limit of %d for a PDF", resp.ContentLength, MaxPDFBytes)}, true
		return res
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxPDFBytes+1))
	res.bytes = int64(len(body))
	if err != nil {
		if res.reason = err; !refused(err) {
			res.outcome = crawlFail
		}
		return res
	}
	if len(body) > MaxPDFBytes {
		res.reason, res.refused = &RejectedError{URL: res.url, Err: fmt.Errorf("over the limit of %d bytes for a PDF", MaxPDFBytes)}, true
		return res
	}
	reader := c.PDF
	if reader == nil {
		reader = pdftext.Default()
	}
	doc, err := ParsePDF(ctx, body, res.url, reader)
	var rej *RejectedError
	switch {
	case errors.As(err, &rej):
		res.reason, res.refused = err, true
		if errors.Is(err, pdftext.ErrTimeout) {
			res.outcome = crawlFail
		}
		return res
	case err != nil:
		res.outcome, res.reason = crawlFail, err
		return res
	}
	res.outcome, res.doc = crawlPage, doc
	return res
}
