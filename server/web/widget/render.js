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
// streaming answer's last blank line. However many blocks, line breaks or links the
// model wrote, an answer is at most BUDGET's elements and one more that holds the rest
// as text.
import { guardSameOrigin } from './core.js';
import { parseMarkdown } from './markdown.js';

/**
 * BUDGET bounds the elements of one answer, and among them its blocks (paragraphs and
 * lists): past either, the rest of the answer is shown as its text in one element. A
 * 20 000-character answer of prose, bold, code, links and lists is about 1 100 elements
 * in 270 blocks, and the answers of a chat are far shorter; thousands of paragraphs,
 * line breaks, list items or links are broken or hostile model output, and the browser's
 * layout of so many elements, not the parsing, would take most of the time it is shown
 * in. A block costs the layout several times what an element inside one does (each is
 * laid out on its own, only when on screen: chat.css): make bench.
 */
export const BUDGET = Object.freeze({ elements: 1500, blocks: 400 });

// An answer's build: how many elements and blocks it has made and, once it has made its
// budget, the text of the rest. In that text a line break stands where the answer showed
// one (a <br> or a new list item) and a blank line between blocks; none at its start or end.
function builder(origin, budget) {
  const guarded = new Map();
  return {
    guard(href) {
      let g = guarded.get(href);
      if (!g) guarded.set(href, (g = guardSameOrigin(href, origin)));
      return g;
    },
    budget,
    elements: 0,
    blocks: 0,
    rest: null, // the text past the budget, once reached
    gap: '', // the break due before the rest's next text
  };
}

// make appends a new element to parent (a block: one of the answer's own) and returns
// it, or returns null once the answer has made its budget of elements or of blocks: from
// then on, what would have been built is text.
function make(b, tag, parent, block = false) {
  if (b.rest === null && b.elements < b.budget.elements && !(block && b.blocks >= b.budget.blocks)) {
    b.elements++;
    if (block) b.blocks++;
    const e = document.createElement(tag);
    parent.appendChild(e);
    return e;
  }
  if (b.rest === null) b.rest = '';
  return null;
}

function text(b, parent, t) {
  if (b.rest === null) {
    parent.appendChild(document.createTextNode(t));
    return;
  }
  if (b.rest) b.rest += b.gap;
  b.rest += t;
  b.gap = '';
}

// brk notes a break ('\n' or '\n\n') due before the rest's next text.
function brk(b, gap) {
  if (b.rest !== null && gap.length > b.gap.length) b.gap = gap;
}

function appendInlines(b, parent, inlines) {
  for (const n of inlines) {
    switch (n.type) {
      case 'strong':
        appendInlines(b, make(b, 'strong', parent), n.children);
        break;
      case 'code': {
        const code = make(b, 'code', parent);
        text(b, code, n.text);
        break;
      }
      case 'br':
        if (!make(b, 'br', parent)) brk(b, '\n');
        break;
      case 'link': {
        const g = b.guard(n.href);
        if (!g.ok) {
          const span = make(b, 'span', parent);
          appendInlines(b, span, n.children);
          text(b, span, ` (${n.href})`);
          break;
        }
        const a = make(b, 'a', parent);
        if (a) a.setAttribute('href', g.url);
        appendInlines(b, a, n.children);
        break;
      }
      default:
        text(b, parent, n.text);
    }
  }
}

/**
 * buildMarkdown returns the nodes of an answer, for a page at origin, built anew: as
 * many elements as budget allows ({elements, blocks}, BUDGET) and then, if it needs
 * more, one that shows the rest as text.
 */
export function buildMarkdown(content, origin, budget = BUDGET) {
  return [...buildFragment(content, origin, budget).childNodes];
}

function buildFragment(content, origin, budget) {
  const b = builder(origin, budget);
  const frag = document.createDocumentFragment();
  build(b, content, frag);
  appendRest(b, frag);
  return frag;
}

// build appends content's blocks to parent, as many elements as b's budget allows, and
// the text of the rest to b.rest.
function build(b, content, parent) {
  for (const block of parseMarkdown(content)) {
    brk(b, '\n\n');
    if (block.type === 'p') {
      const p = make(b, 'p', parent, true);
      block.lines.forEach((line, i) => {
        if (i && !make(b, 'br', p)) brk(b, '\n');
        appendInlines(b, p, line);
      });
      continue;
    }
    const list = make(b, block.type, parent, true);
    if (list && block.type === 'ol' && block.start !== 1) list.start = block.start;
    for (const item of block.items) {
      const li = make(b, 'li', list);
      if (!li) brk(b, '\n');
      appendInlines(b, li, item);
    }
  }
}

// appendRest appends the element that shows the text past the budget, if any.
function appendRest(b, parent) {
  if (b.rest === null) return;
  const rest = document.createElement('div');
  rest.setAttribute('class', 'msg-rest');
  rest.textContent = b.rest;
  parent.appendChild(rest);
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
    frag = buildFragment(content, origin, BUDGET);
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
 * (a blank line ends every block) and stays as built, or as text once past the budget
 * (BUDGET, as for buildMarkdown); only the rest is built again.
 */
export function streamMarkdown(box, origin, budget = BUDGET) {
  let done = ''; // the complete blocks' source
  let kept = 0; // box's first nodes, which show them
  let b = builder(origin, budget); // their build
  return {
    show(content) {
      if (!content.startsWith(done)) {
        done = '';
        kept = 0;
        b = builder(origin, budget);
      }
      while (box.childNodes.length > kept) box.lastChild.remove();
      const cut = blocksEnd(content, done.length);
      if (cut > done.length) {
        const frag = document.createDocumentFragment();
        build(b, content.slice(done.length, cut), frag);
        kept += frag.childNodes.length;
        box.appendChild(frag);
        done = content.slice(0, cut);
      }
      // The rest is built on from where the complete blocks left the budget.
      const tail = { ...b };
      const frag = document.createDocumentFragment();
      build(tail, content.slice(cut), frag);
      appendRest(tail, frag);
      box.appendChild(frag);
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
