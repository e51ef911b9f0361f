// Runs before every page request (Next 16's proxy, formerly middleware).
//
// - What agents read instead of the pages' HTML goes to sitetools, which renders it from
//   its index: /llms.txt and /<lang>/llms.txt, every page as Markdown at its address with
//   .md appended (/pricing.md, /blog/index.html.md), and any page asked for with Accept:
//   text/markdown. (Next sets its pages' Vary itself, replacing any other, and answers
//   them no-store: no cache serves a page's HTML for its Markdown. nginx and Caddy from
//   deploy/proxy add Vary: Accept in front.)
// - A Content-Security-Policy with a fresh nonce. The policy goes on the request too:
//   Next reads the nonce from it and puts it on its own inline scripts. Scripts, styles
//   and fetches come from this origin only, plus the WebMCP relay on the visitor's
//   computer (ws://localhost:$WEBMCP_RELAY_PORT, default 4797).
// - Status 404 for a path that is no page: neither a Markdown page (lib/content.ts) nor
//   one of appPages (the catch-all page renders app/not-found.tsx for it).
import { NextResponse, type NextRequest } from "next/server";
import { pages } from "@/lib/content";
import { proxyToSitetools } from "@/lib/sitetools";

// forAgents says whether sitetools answers the request (see above). The Accept rule is
// the proxies' in deploy/proxy: any mention of text/markdown.
function forAgents(request: NextRequest): boolean {
  const path = request.nextUrl.pathname;
  return /^\/(?:[a-z]{2,3}\/)?llms\.txt$/.test(path) || path.endsWith(".md") || /text\/markdown/i.test(request.headers.get("accept") ?? "");
}

export async function proxy(request: NextRequest) {
  if (forAgents(request)) return proxyToSitetools(request);
  const nonce = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
  const relayPort = Number(process.env.WEBMCP_RELAY_PORT) || 4797;
  const csp = [
    "default-src 'self'",
    `script-src 'self' 'nonce-${nonce}'`,
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    `connect-src 'self' ws://localhost:${relayPort}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join("; ");

  const requestHeaders = new Headers(request.headers);
  requestHeaders.set("content-security-policy", csp);
  // Not when a page of this site fetch()es it (Sec-Fetch-Dest: empty), as Next's router
  // does for the page's RSC payload: for an answer that is not 2xx the router loads the
  // whole document instead, which would end client-side navigation. (Next hides the
  // RSC request headers from proxy.ts.) A HEAD request still learns the 404.
  const fetched = request.method === "GET" && request.headers.get("sec-fetch-dest") === "empty";
  const missing = !fetched && !(await isPage(request.nextUrl.pathname));
  const response = NextResponse.next({ request: { headers: requestHeaders }, status: missing ? 404 : 200 });
  response.headers.set("content-security-policy", csp);
  // Chrome offers document.modelContext (WebMCP) to visitors without the flag when the
  // page carries an origin-trial token for this origin.
  const trial = process.env.WEBMCP_ORIGIN_TRIAL_TOKEN;
  if (trial) response.headers.set("origin-trial", trial);
  return response;
}

// The pages the app renders itself rather than from a Markdown file.
const appPages = new Set(["/search"]);

async function isPage(pathname: string): Promise<boolean> {
  let path: string;
  try {
    path = decodeURIComponent(pathname);
  } catch {
    return false;
  }
  if (path.length > 1) path = path.replace(/\/+$/, "");
  return appPages.has(path) || (await pages()).has(path);
}

export const config = {
  matcher: [
    {
      // Pages only: not the sitetools routes (app/api/chat, app/api/feedback,
      // app/api/handover, app/mcp, app/mcp/server-card, app/webmcp), Next's static files
      // and images, or file names (favicon.ico, public/…, app/.well-known/…).
      source: "/((?!api/chat(?:/|$)|api/feedback$|api/handover$|mcp(?:/server-card)?$|webmcp/[^/]+$|_next/static/|_next/image|.*\\.[^/]*$).*)",
      // Prefetches are not documents and need no policy.
      missing: [
        { type: "header", key: "next-router-prefetch" },
        { type: "header", key: "purpose", value: "prefetch" },
      ],
    },
    // What agents read (forAgents), file names the entry above leaves out.
    "/((?:[a-z]{2,3}/)?llms\\.txt)",
    "/(.*\\.md)",
  ],
};
