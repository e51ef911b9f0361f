"use client";

// A page's rendered Markdown. A click on a link to another page of this site becomes a
// client-side navigation, as next/link would do; links to a section of the current
// page, to other sites, to files or with a modifier key are the browser's.
import { useRouter } from "next/navigation";
import type { MouseEvent } from "react";

export default function Markdown({ html }: { html: string }) {
  const router = useRouter();

  function onClick(e: MouseEvent<HTMLDivElement>) {
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    const a = e.target instanceof Element ? e.target.closest("a[href]") : null;
    if (!(a instanceof HTMLAnchorElement) || (a.target && a.target !== "_self") || a.hasAttribute("download")) return;
    const url = new URL(a.href, location.href);
    if (url.origin !== location.origin || !/^https?:$/.test(url.protocol)) return;
    if (url.pathname === location.pathname && url.search === location.search && url.hash) return;
    e.preventDefault();
    router.push(pagePath(url));
  }

  return <div className="prose" onClick={onClick} dangerouslySetInnerHTML={{ __html: html }} />;
}

/** pagePath is url's path, query and fragment, without the trailing slash the
 * Markdown's links may have (/blog/ is /blog here). */
export function pagePath(url: URL): string {
  const path = url.pathname.length > 1 ? url.pathname.replace(/\/+$/, "") : url.pathname;
  return path + url.search + url.hash;
}
