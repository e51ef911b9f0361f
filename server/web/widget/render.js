// Chat answers as DOM nodes: the Markdown subset of markdown.js, built with
// createElement and text nodes (never HTML strings). Links go through the one
// same-origin guard: a link to this site becomes a link to its absolute URL; any other
// stays text, its url shown in brackets.
//
// Built with plain createElement/appendChild and each href guarded once per answer: a
// 20 000-character answer is built in a few milliseconds (make bench). The widget shows
// its whole transcript again whenever it changes (a question asked, the language or
// another tab's transcript): renderMarkdown builds each stored answer once and copies it
// after that, and streamMarkdown builds again, frame by frame, only what follows the
// streaming answer's last blank line.
import { guardSameOrigin } from './core.js';
import { parseMarkdown } from './markdown.js';

function el(tag, parent) {
  const e = document.createElement(tag);
  parent.appendChild(e);
  return e;
}

function appendInlines(parent, inlines, guard) {
  for (const n of inlines) {
    switch (n.type) {
      case 'strong':
        appendInlines(el('strong', parent), n.children, guard);
        break;
      case 'code':
        el('code', parent).textContent = n.text;
        break;
      case 'br':
        el('br', parent);
        break;
      case 'link': {
        const g = guard(n.href);
        if (!g.ok) {
          const span = el('span', parent);
          appendInlines(span, n.children, guard);
          span.appendChild(document.createTextNode(` (${n.href})`));
          break;
        }
        const a = el('a', parent);
        a.setAttribute('href', g.url);
        appendInlines(a, n.children, guard);
        break;
      }
      default:
        parent.appendChild(document.createTextNode(n.text));
    }
  }
}

/** buildMarkdown returns the nodes of an answer, for a page at origin, built anew. */
export function buildMarkdown(content, origin) {
  return [...build(content, origin).childNodes];
}

function build(content, origin) {
  const guarded = new Map();
  const guard = (href) => {
    let g = guarded.get(href);
    if (!g) guarded.set(href, (g = guardSameOrigin(href, origin)));
    return g;
  };
  const blocks = document.createDocumentFragment();
  for (const b of parseMarkdown(content)) {
    if (b.type === 'p') {
      const p = el('p', blocks);
      b.lines.forEach((line, i) => {
        if (i) el('br', p);
        appendInlines(p, line, guard);
      });
      continue;
    }
    const list = el(b.type, blocks);
    if (b.type === 'ol' && b.start !== 1) list.start = b.start;
    for (const item of b.items) appendInlines(el('li', list), item, guard);
  }
  return blocks;
}

// Answers built before, most recently shown last, up to CACHED_CHARS characters of
// answers (a full transcript is 200 messages; in this tab only).
const CACHED_CHARS = 2_000_000;
const built = new Map();
let builtChars = 0;

/**
 * renderMarkdown returns the nodes of an answer, for a page at origin: new nodes each
 * time, copied from the first build of the same answer.
 */
export function renderMarkdown(content, origin) {
  const key = `${origin} ${content}`;
  let frag = built.get(key);
  if (frag) {
    built.delete(key);
  } else {
    frag = build(content, origin);
    builtChars += key.length;
    for (const [k] of built) {
      if (builtChars <= CACHED_CHARS) break;
      built.delete(k);
      builtChars -= k.length;
    }
  }
  built.set(key, frag);
  return [...frag.cloneNode(true).childNodes];
}

/**
 * streamMarkdown shows an answer in box while it streams: show(content) with the
 * answer so far, which grows at its end. What precedes the last blank line is complete
 * (a blank line ends every block) and stays as built; only the rest is built again.
 */
export function streamMarkdown(box, origin) {
  let done = ''; // the complete blocks' source
  let kept = 0; // box's first nodes, which show them
  return {
    show(content) {
      if (!content.startsWith(done)) {
        done = '';
        kept = 0;
      }
      while (box.childNodes.length > kept) box.lastChild.remove();
      const cut = blocksEnd(content, done.length);
      if (cut > done.length) {
        const frag = build(content.slice(done.length, cut), origin);
        kept += frag.childNodes.length;
        box.appendChild(frag);
        done = content.slice(0, cut);
      }
      box.appendChild(build(content.slice(cut), origin));
    },
  };
}

const SPACE = /\s/;

// blocksEnd returns the end of content's last blank line at or after from (just after
// its line break), or from: where the blocks before it are complete. A blank line is a
// run of white space holding two line breaks ("\r\n" is one), as parseMarkdown reads it.
function blocksEnd(content, from) {
  let p = content.length;
  while (p > from) {
    while (p > from && !SPACE.test(content[p - 1])) p--;
    let end = -1;
    let breaks = 0;
    while (p > from && SPACE.test(content[p - 1])) {
      const q = --p;
      const c = content[q];
      if (c === '\n' && end < 0) end = q + 1;
      if (end < 0) continue;
      if (c === '\r' || (c === '\n' && content[q - 1] !== '\r')) breaks++;
    }
    if (breaks >= 2) return end;
  }
  return from;
}
