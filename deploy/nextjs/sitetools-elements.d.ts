// The elements sitetools' widget modules define, for TSX: /webmcp/search.js defines
// <sitetools-search> (app/layout.tsx loads it), and its attributes are listed here.
import type { DetailedHTMLProps, HTMLAttributes } from "react";

type SearchAttributes = HTMLAttributes<HTMLElement> & {
  /** A "Search" button that opens the search in a dialog (Ctrl-K / ⌘-K, or "/"). */
  modal?: boolean;
  /** The button's text. */
  label?: string;
  placeholder?: string;
  /** Only pages under this path, e.g. "/blog/". */
  "path-prefix"?: string;
};

declare module "react" {
  namespace JSX {
    interface IntrinsicElements {
      "sitetools-search": DetailedHTMLProps<SearchAttributes, HTMLElement>;
    }
  }
}
