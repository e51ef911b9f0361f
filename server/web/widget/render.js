// Chat answers as DOM nodes: the Markdown subset of markdown.js, built with
// createElement and text nodes (never HTML strings). Links go through the one
// same-origin guard: a link to this site becomes a link to its absolute URL; any other
// stays text, its url shown in brackets.
//
// Built with plain createElement/appendChild and each href guarded once per answer: a
// 20 000-character answer is built in a few milliseconds (make bench).
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

/** renderMarkdown returns the nodes of an answer, for a page at origin. */
export function renderMarkdown(content, origin) {
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
  return [...blocks.childNodes];
}
