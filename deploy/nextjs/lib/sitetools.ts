// A same-origin proxy from a Next.js (App Router) frontend to sitetools: GET and POST
// pass through, answers stream (the upstream body is returned as it arrives), and the
// client address goes on in X-Forwarded-For for sitetools' rate limits.
//
// Only standard Request/Response/fetch: no Next.js import, so the same function serves
// any framework whose handlers take a Request.
//
//   SITETOOLS_URL                    sitetools' address as this server reaches it, e.g.
//                                    http://sitetools:8080
//   SITETOOLS_CLIENT_ADDRESS_HEADER  the request header that the proxy directly in front
//                                    of this server always sets to its socket peer, e.g.
//                                    x-forwarded-for (deploy/proxy/nginx.conf, Caddy,
//                                    Vercel); unset: none (read per request)
//
// sitetools believes X-Forwarded-For only from TRUSTED_PROXIES: set it there to the
// address this server's requests come from (a pod range, a private subnet).

const upstream = process.env.SITETOOLS_URL ?? "http://127.0.0.1:8080";

// The request headers sitetools reads, and only those: a site's Cookie, Authorization
// and whatever else its visitors send stay with the site. Content-Length is recomputed
// by fetch, Host is the upstream's, and the client address is set below.
const passed = [
  "content-type",
  "accept",
  "accept-language",
  "origin",
  "idempotency-key",
  "if-none-match",
  // A chat turn's proof of work (CHAT_PROOF_OF_WORK).
  "altcha",
  // Remote MCP (Streamable HTTP).
  "mcp-protocol-version",
  "mcp-session-id",
  "last-event-id",
  // A CORS preflight.
  "access-control-request-method",
  "access-control-request-headers",
];

// Hop-by-hop headers (RFC 9110 §7.6.1) describe one connection and never pass a proxy;
// nor does an answer's Content-Length, as its body is streamed on.
const hopByHop = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
  "content-length",
]);

// clientAddress is the visitor's address as the hop in front of this server saw it, or
// null. A route handler never sees its socket peer, and `next start` passes whatever
// X-Forwarded-For or X-Real-IP a client wrote on unchanged (it sets X-Forwarded-For to
// the peer only when the request has none): no header can be believed unless a proxy in
// front always sets it. SITETOOLS_CLIENT_ADDRESS_HEADER names that header; its last entry
// is the one that proxy wrote (it overwrote the header or appended to it). Unset, no
// address is passed on, and sitetools counts every visitor as this server: one shared
// rate limit, but none a client can choose.
function clientAddress(req: Request): string | null {
  const header = process.env.SITETOOLS_CLIENT_ADDRESS_HEADER?.trim();
  if (!header) return null;
  const value = req.headers.get(header);
  const last = value?.slice(value.lastIndexOf(",") + 1).trim() ?? "";
  // An IPv4 or IPv6 address, nothing else (sitetools parses it again).
  return last.length <= 45 && /^(\d{1,3}(\.\d{1,3}){3}|[0-9a-f.]*:[0-9a-f:.]*)$/i.test(last) ? last : null;
}

export async function proxyToSitetools(req: Request): Promise<Response> {
  const incoming = new URL(req.url);
  const target = new URL(incoming.pathname + incoming.search, upstream);

  const headers = new Headers();
  for (const name of passed) {
    const value = req.headers.get(name);
    if (value !== null) headers.set(name, value);
  }
  const client = clientAddress(req);
  if (client) headers.set("x-forwarded-for", client);
  headers.set("x-forwarded-proto", incoming.protocol.replace(/:$/, ""));
  headers.set("x-forwarded-host", incoming.host);
  // fetch would decompress a compressed answer but keep its Content-Encoding: ask for
  // none, so that the bytes pass through as they are.
  headers.set("accept-encoding", "identity");

  const hasBody = req.method !== "GET" && req.method !== "HEAD";
  let res: Response;
  try {
    res = await fetch(target, {
      method: req.method,
      headers,
      body: hasBody ? req.body : undefined,
      // Required by Node's fetch to send a streamed request body.
      duplex: "half",
      redirect: "manual",
      cache: "no-store",
      // The visitor going away cancels the upstream request.
      signal: req.signal,
    } as RequestInit & { duplex: "half" });
  } catch {
    return Response.json(
      { error: { code: "unavailable", message: "the site's assistant is unavailable; try again shortly" } },
      { status: 503, headers: { "retry-after": "5" } },
    );
  }

  const out = new Headers();
  res.headers.forEach((value, name) => {
    if (!hopByHop.has(name)) out.append(name, value);
  });
  if (out.get("content-type")?.startsWith("text/event-stream")) {
    // Keep any proxy in front of this server (nginx, a CDN) and Next's own compression
    // from holding events back.
    out.set("x-accel-buffering", "no");
    // no-transform is added to what sitetools said (no-store), never in its place.
    const cc = out.get("cache-control");
    if (!/no-transform/.test(cc ?? "")) {
      out.set("cache-control", cc ? `${cc}, no-transform` : "no-cache, no-transform");
    }
  }
  // The upstream body stream itself: every chunk is passed on when it arrives.
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers: out });
}

// The handlers of a route that passes its path to sitetools, one for each method: a route
// file exports those its path answers, e.g. `export const { GET, POST } = sitetoolsRoute;`.
export const sitetoolsRoute = {
  GET: proxyToSitetools,
  HEAD: proxyToSitetools,
  POST: proxyToSitetools,
  DELETE: proxyToSitetools,
  OPTIONS: proxyToSitetools,
};
