// Package content reads a site's pages: Markdown and HTML into documents of sections
// (extract), documents into chunks for embedding (chunk), and pages over HTTP, from a
// sitemap and under robots.txt (crawl, sitemap). It knows nothing of search or storage,
// so that both the search index (tools/sitesearch) and the site's renderer (server/web)
// read pages the same way.
package content
