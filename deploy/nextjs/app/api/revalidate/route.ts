// app/api/revalidate/route.ts: on-demand revalidation for the site's CMS, and the same
// pages re-indexed by sitetools, in one call. The CMS (a publish webhook) sends
//
//   POST /api/revalidate
//   Authorization: Bearer $REVALIDATE_SECRET
//   {"paths": ["/pricing", "/blog/launch"], "tags": ["navigation"]}   or   {"all": true}
//
// Next.js drops its cached render of each path (revalidatePath) and of each tag
// (revalidateTag), then sitetools is asked to re-crawl those paths
// (POST /admin/reindex on its admin listener), so that search and chat answer from the
// new page within seconds. {"all": true} revalidates every page and re-crawls the whole
// site. Tags alone re-index nothing: sitetools knows pages by URL, so send the paths too.
//
//   REVALIDATE_SECRET      the secret the CMS sends (at least 16 characters); unset,
//                          the route answers 404
//   SITETOOLS_ADMIN_URL    sitetools' admin listener as this server reaches it, e.g.
//                          http://sitetools:9090; unset, only Next.js revalidates
//   SITETOOLS_HOOK_TOKEN   sitetools' ADMIN_HOOK_TOKEN: the publish hook's scope only,
//                          so a leak of this server's environment reindexes pages at
//                          worst and reads no bookings or reports
//
// The hook token stays on this server: it is read in this route handler only, and a
// variable without the NEXT_PUBLIC_ prefix never reaches the browser's bundle.
//
// Answers 200 {"revalidated": {...}, "reindex": {"id", "state", "coalesced"} | null}, or
// 502 with "reindex": {"error": ...} when sitetools did not take the paths: Next.js has
// revalidated them all the same, and a retry of the same call is harmless. An
// Idempotency-Key header is passed on: the same key with the same paths is the same
// sitetools job.
import { createHash, timingSafeEqual } from "node:crypto";
import { revalidatePath, revalidateTag } from "next/cache";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

// sitetools takes at most 1000 URLs a request; more become one re-crawl of the site.
const maxPaths = 1000;
const maxTags = 100;
const maxBody = 256 * 1024;
const sitetoolsTimeoutMs = 5000;

type Body = { paths: string[]; tags: string[]; all: boolean };

type Reindex = { id: string; state: string; coalesced: boolean } | { error: string } | null;

export async function POST(req: Request): Promise<Response> {
  const secret = process.env.REVALIDATE_SECRET ?? "";
  if (secret.length < 16) return problem(404, "not_found", "not found");
  if (!authorized(req.headers.get("authorization"), secret)) {
    return problem(401, "unauthorized", "Authorization: Bearer <REVALIDATE_SECRET> is missing or wrong");
  }

  let body: Body;
  try {
    body = parse(await readJSON(req));
  } catch (err) {
    return problem(400, "invalid_arguments", (err as Error).message);
  }

  if (body.all) {
    revalidatePath("/", "layout");
  } else {
    for (const path of body.paths) revalidatePath(path);
  }
  for (const tag of body.tags) revalidateTag(tag, "max");
  const revalidated = body.all ? { all: true } : { paths: body.paths, tags: body.tags };

  const reindex = await reindexOnSitetools(body, req.headers.get("idempotency-key"));
  const status = reindex !== null && "error" in reindex ? 502 : 200;
  return Response.json({ revalidated, reindex }, { status, headers: { "cache-control": "no-store" } });
}

// authorized compares the bearer token with the secret in constant time (over their
// hashes, so that the length is not told either).
function authorized(header: string | null, secret: string): boolean {
  const match = /^Bearer\s+(.+)$/i.exec(header ?? "");
  if (!match) return false;
  const digest = (s: string) => createHash("sha256").update(s).digest();
  return timingSafeEqual(digest(match[1].trim()), digest(secret));
}

async function readJSON(req: Request): Promise<unknown> {
  if (!(req.headers.get("content-type") ?? "").toLowerCase().startsWith("application/json")) {
    throw new Error("Content-Type must be application/json");
  }
  const text = await req.text();
  if (text.length > maxBody) throw new Error(`the body is over ${maxBody} bytes`);
  try {
    return JSON.parse(text);
  } catch {
    throw new Error("the body is not JSON");
  }
}

// parse checks the body: paths are absolute paths of this site ("/pricing"), tags
// non-empty strings; at least one of paths, tags or all.
function parse(input: unknown): Body {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    throw new Error('the body must be an object: {"paths": [...], "tags": [...]} or {"all": true}');
  }
  const o = input as Record<string, unknown>;
  const all = o.all === true;
  const paths = strings(o.paths ?? [], "paths");
  const tags = strings(o.tags ?? [], "tags");
  for (const p of paths) {
    if (!p.startsWith("/") || p.startsWith("//") || /[\s\\#]/.test(p) || p.length > 2048) {
      throw new Error(`paths: ${JSON.stringify(p.slice(0, 100))} is not a path of this site, e.g. "/pricing"`);
    }
  }
  if (paths.length > maxPaths) throw new Error(`paths: at most ${maxPaths}; send {"all": true} instead`);
  if (tags.length > maxTags) throw new Error(`tags: at most ${maxTags}`);
  if (tags.some((t) => t.length === 0 || t.length > 256)) throw new Error("tags: each is 1 to 256 characters");
  if (!all && paths.length === 0 && tags.length === 0) throw new Error('nothing to revalidate: give "paths", "tags" or "all": true');
  return { paths: [...new Set(paths)], tags: [...new Set(tags)], all };
}

function strings(v: unknown, name: string): string[] {
  if (!Array.isArray(v) || v.some((s) => typeof s !== "string")) throw new Error(`${name} must be an array of strings`);
  return v as string[];
}

// reindexOnSitetools asks sitetools to re-crawl the paths (or the whole site). null when
// there is nothing to ask (no paths) or no sitetools admin URL is set.
async function reindexOnSitetools(body: Body, idempotencyKey: string | null): Promise<Reindex> {
  const adminURL = process.env.SITETOOLS_ADMIN_URL;
  const token = process.env.SITETOOLS_HOOK_TOKEN;
  if (!adminURL || (!body.all && body.paths.length === 0)) return null;
  if (!token) return { error: "SITETOOLS_HOOK_TOKEN is not set: give it sitetools' ADMIN_HOOK_TOKEN" };

  const headers: Record<string, string> = {
    authorization: `Bearer ${token}`,
    "content-type": "application/json",
    accept: "application/json",
  };
  if (idempotencyKey) headers["idempotency-key"] = idempotencyKey;
  let res: Response;
  try {
    res = await fetch(new URL("/admin/reindex", adminURL), {
      method: "POST",
      headers,
      body: JSON.stringify(body.all ? { all: true } : { urls: body.paths }),
      cache: "no-store",
      redirect: "manual",
      signal: AbortSignal.timeout(sitetoolsTimeoutMs),
    });
  } catch (err) {
    console.warn("sitetools did not take the re-crawl; its next sync will:", (err as Error).message);
    return { error: "sitetools is unreachable" };
  }
  const answer = (await res.json().catch(() => null)) as Record<string, unknown> | null;
  if (res.status !== 202 && res.status !== 200) {
    const e = answer?.error as { code?: string; message?: string } | undefined;
    const error = `sitetools answered ${res.status}${e?.code ? ` ${e.code}` : ""}${e?.message ? `: ${e.message}` : ""}`;
    console.warn("sitetools did not take the re-crawl; its next sync will:", error);
    return { error };
  }
  return { id: String(answer?.id ?? ""), state: String(answer?.state ?? ""), coalesced: answer?.coalesced === true };
}

function problem(status: number, code: string, message: string): Response {
  return Response.json({ error: { code, message } }, { status, headers: { "cache-control": "no-store" } });
}
