// The site's pages: Markdown files with YAML front matter (title, lang) in one folder,
// rendered to HTML with marked. index.md is /, blog/index.md is /blog,
// services/web-platforms.md is /services/web-platforms. Only English pages are served.
//
//   SITE_CONTENT_DIR   the folder, default ../demo/site (relative to this app)
//
// The folder is read once per process: at build time for generateStaticParams, and on
// the first request by `next start` (pages render per request, for the CSP nonce).
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { Marked, type Tokens } from "marked";

export type Page = {
  slug: string[]; // path segments: [] for /, ["services", "web-platforms"]
  path: string; // "/", "/services/web-platforms"
  title: string;
  lang: string;
  html: string;
};

// Read at run time from outside the app: kept out of the build's file tracing.
const contentDir = path.resolve(/*turbopackIgnore: true*/ process.cwd(), process.env.SITE_CONTENT_DIR ?? "../demo/site");

let loaded: Promise<Map<string, Page>> | undefined;

/** pages returns every English page by its path. */
export function pages(): Promise<Map<string, Page>> {
  loaded ??= loadPages();
  return loaded;
}

export async function pageBySlug(slug: string[] | undefined): Promise<Page | undefined> {
  return (await pages()).get(pathOf(slug ?? []));
}

function pathOf(slug: string[]): string {
  return "/" + slug.join("/");
}

async function loadPages(): Promise<Map<string, Page>> {
  const files = (await readdir(/*turbopackIgnore: true*/ contentDir, { recursive: true }))
    .filter((f) => f.endsWith(".md"))
    .sort();
  const out = new Map<string, Page>();
  for (const file of files) {
    const src = await readFile(path.join(/*turbopackIgnore: true*/ contentDir, file), "utf8");
    const { meta, body } = frontMatter(src);
    const lang = (meta.lang ?? "en").toLowerCase().split("-")[0];
    // Other languages (de/) are not part of this English frontend.
    if (lang !== "en") continue;
    const segments = file.replace(/\.md$/, "").split(path.sep);
    if (segments[segments.length - 1] === "index") segments.pop();
    const { html, h1 } = render(body);
    const page: Page = { slug: segments, path: pathOf(segments), title: meta.title || h1 || "Untitled", lang, html };
    out.set(page.path, page);
  }
  return out;
}

// frontMatter splits "---\nkey: value\n---\n" off the top: plain, single- or
// double-quoted scalars, which is all the pages use.
function frontMatter(src: string): { meta: Record<string, string>; body: string } {
  const m = /^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/.exec(src);
  if (!m) return { meta: {}, body: src };
  const meta: Record<string, string> = {};
  for (const line of m[1].split(/\r?\n/)) {
    const kv = /^([A-Za-z_][\w-]*):\s*(.*?)\s*$/.exec(line);
    if (!kv) continue;
    let value = kv[2];
    if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) {
      try {
        value = JSON.parse(value);
      } catch {
        value = value.slice(1, -1);
      }
    } else if (value.startsWith("'") && value.endsWith("'") && value.length >= 2) {
      value = value.slice(1, -1).replace(/''/g, "'");
    }
    meta[kv[1]] = value;
  }
  return { meta, body: src.slice(m[0].length) };
}

// render turns Markdown into HTML whose headings have GitHub-style ids, the anchors
// sitetools' index gives search results: the heading's text lower-cased, punctuation
// removed, spaces as hyphens; repeats get -1, -2 ….
function render(markdown: string): { html: string; h1: string } {
  const seen = new Map<string, number>();
  let h1 = "";
  const marked = new Marked({ gfm: true });
  marked.use({
    renderer: {
      heading({ tokens, depth }: Tokens.Heading) {
        const inner = this.parser.parseInline(tokens);
        const text = textOf(inner);
        if (depth === 1 && !h1) h1 = text;
        const id = uniqueId(slugify(text) || "heading", seen);
        return `<h${depth} id="${id}">${inner}</h${depth}>\n`;
      },
    },
  });
  const html = marked.parse(markdown, { async: false });
  return { html, h1 };
}

function slugify(text: string): string {
  let out = "";
  for (const ch of text.trim().toLowerCase()) {
    if (/[\p{L}\p{N}\p{M}_-]/u.test(ch)) out += ch;
    else if (ch === " ") out += "-";
  }
  return out;
}

function uniqueId(base: string, seen: Map<string, number>): string {
  let id = base;
  while (seen.has(id)) {
    const n = (seen.get(base) ?? 0) + 1;
    seen.set(base, n);
    id = `${base}-${n}`;
  }
  seen.set(id, 0);
  return encodeAttr(id);
}

// textOf is the text of an HTML fragment as marked writes it.
function textOf(html: string): string {
  return html
    .replace(/<[^>]*>/g, "")
    .replace(/&(#x[0-9a-f]+|#[0-9]+|amp|lt|gt|quot|apos);/gi, (_, e: string) => {
      const named: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };
      if (e[0] !== "#") return named[e.toLowerCase()];
      const code = e[1] === "x" || e[1] === "X" ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
      return String.fromCodePoint(code);
    })
    .trim();
}

function encodeAttr(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
}
