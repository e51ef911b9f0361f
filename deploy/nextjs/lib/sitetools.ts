// A same-origin proxy from a Next.js (App Router) frontend to sitetools: GET and POST
// pass through untouched, answers stream (the upstream body is returned as it arrives),
// and the client address goes on in X-Forwarded-For for sitetools' rate limits.
//
// Only standard Request/Response/fetch: no Next.js import, so the same function serves
// any framework whose handlers take a Request.
//
//   SITETOOLS_URL   sitetools' address as this server reaches it, e.g. http://sitetools:8080
//
// sitetools believes X-Forwarded-For only from TRUSTED_PROXIES: set it there to the
// address this server's requests come from (a pod range, a private subnet).

const upstream = process.env.SITETOOLS_URL ?? "http://127.0.0.1:8080";

// Hop-by-hop headers (RFC 9110 §7.6.1) describe one connection and never pass a proxy.
// Content-Length is recomputed by fetch; Host is the upstream's.
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

// forwardedFor is the client address to pass on as X-Forwarded-For. A route handler
// never sees the socket, so it can only pass on what the hosting platform's edge wrote:
//
// - X-Real-IP, where present, is one address the edge set itself (Vercel sets it; so does
//   nginx with `proxy_set_header X-Real-IP $remote_addr`): it wins, and whatever the
//   client put in X-Forwarded-For is dropped.
// - Otherwise X-Forwarded-For is passed on whole (most platforms rewrite it and drop what
//   the client sent): sitetools walks it from the right, skipping TRUSTED_PROXIES, so an
//   entry a client forged at the left never counts.
//
// A bare `next start` sets X-Forwarded-For to the socket peer only when the request has
// none, and passes a client's own on unchanged: put nginx or Caddy (deploy/proxy/) in
// front of it, or an edge that sets one of these headers.
function forwardedFor(req: Request): string | null {
  const real = req.headers.get("x-real-ip")?.trim();
  if (real) return real;
  return req.headers.get("x-forwarded-for");
}

export async function proxyToSitetools(req: Request): Promise<Response> {
  const incoming = new URL(req.url);
  const target = new URL(incoming.pathname + incoming.search, upstream);

  const headers = new Headers();
  req.headers.forEach((value, name) => {
    if (!hopByHop.has(name) && !name.startsWith("x-forwarded-") && name !== "x-real-ip") {
      headers.set(name, value);
    }
  });
  const xff = forwardedFor(req);
  if (xff) headers.set("x-forwarded-for", xff);
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
