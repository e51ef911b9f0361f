// /search: the site search as a page of its own, its field in the page with the results
// below it (<sitetools-search> without `modal`; /webmcp/search.js, loaded in the layout,
// defines it). proxy.ts lists this path among the site's pages.
import type { Metadata } from "next";

// A page of results is no page for a search engine's index; its links are.
export const metadata: Metadata = { title: "Search", robots: { index: false, follow: true } };

export default function SearchPage() {
  return (
    <article className="page prose search-page">
      <h1>Search</h1>
      <p>Results appear as you type. Press Enter to search by meaning too, and ↓ to choose a page.</p>
      <sitetools-search />
      <noscript>
        <p>The search needs JavaScript. The navigation above leads to every part of the site.</p>
      </noscript>
    </article>
  );
}
