// Chat answers as DOM nodes: the Markdown subset of markdown.js, built with
// createElement and text nodes (never HTML strings). Links go through the one
// same-origin guard: a link to this site becomes a link to its absolute URL; any other
// stays text, its url shown in brackets.
import { guardSameOrigin } from './core.js';
import { h } from './dom.js';
import { parseMarkdown } from './markdown.js';

function inlineNodes(inlines, origin) {
  return inlines.map((n) => {
    switch (n.type) {
      case 'strong':
        return h('strong', {}, ...inlineNodes(n.children, origin));
      case 'code':
        return h('code', {}, n.text);
      case 'br':
        return h('br', {});
      case 'link': {
        const g = guardSameOrigin(n.href, origin);
        if (!g.ok) return h('span', {}, ...inlineNodes(n.children, origin), ` (${n.href})`);
        return h('a', { href: g.url }, ...inlineNodes(n.children, origin));
      }
      default:
        return document.createTextNode(n.text);
    }
  });
}

/** renderMarkdown returns the nodes of an answer, for a page at origin. */
export function renderMarkdown(content, origin) {
  return parseMarkdown(content).map((b) => {
    if (b.type === 'p') {
      const p = h('p', {});
      b.lines.forEach((line, i) => {
        if (i) p.appendChild(h('br', {}));
        p.append(...inlineNodes(line, origin));
      });
      return p;
    }
    const list = h(b.type, {});
    if (b.type === 'ol' && b.start !== 1) list.start = b.start;
    for (const item of b.items) list.appendChild(h('li', {}, ...inlineNodes(item, origin)));
    return list;
  });
}
