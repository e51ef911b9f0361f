// The small part of Markdown that chat answers use — paragraphs, line breaks, bulleted
// and numbered lists, **bold**, `code` and [links](url) — parsed into a plain tree that
// chat.js turns into DOM nodes (never HTML strings). Anything else stays text.

/**
 * parseMarkdown returns blocks: {type: 'p', lines: [inlines…]} or
 * {type: 'ul' | 'ol', start, items: [[inlines…]…]}, where each item or line is a list of
 * inlines: {type: 'text', text}, {type: 'strong', children}, {type: 'code', text},
 * {type: 'link', href, children}, {type: 'br'}.
 */
export function parseMarkdown(src) {
  const blocks = [];
  let cur = null;
  const close = () => {
    cur = null;
  };
  for (const raw of String(src).replace(/\r\n?/g, '\n').split('\n')) {
    // trimEnd, not /\s+$/: a regex anchored at the end retries at every space of a long
    // run of spaces, which is quadratic.
    const line = raw.trimEnd();
    if (line.trim() === '') {
      close();
      continue;
    }
    const ol = /^\s{0,3}(\d{1,9})[.)]\s+(.*)$/.exec(line);
    const ul = ol ? null : /^\s{0,3}[-*+]\s+(.*)$/.exec(line);
    if (ol || ul) {
      const type = ol ? 'ol' : 'ul';
      if (!cur || cur.type !== type) {
        cur = { type, items: [] };
        if (ol) cur.start = Number(ol[1]);
        blocks.push(cur);
      }
      cur.items.push(parseInline(ol ? ol[2] : ul[1]));
      continue;
    }
    if (cur && (cur.type === 'ol' || cur.type === 'ul') && /^\s/.test(line)) {
      // An indented line continues the list item.
      const item = cur.items[cur.items.length - 1];
      item.push({ type: 'br' }, ...parseInline(line.trim()));
      continue;
    }
    if (!cur || cur.type !== 'p') {
      cur = { type: 'p', lines: [] };
      blocks.push(cur);
    }
    cur.lines.push(parseInline(line.trim()));
  }
  return blocks;
}

/**
 * parseInline parses **bold**, `code` and [text](url) in one line, in time linear in its
 * length: where each closing delimiter is next is looked up once and remembered, so a
 * line of thousands of unclosed "[" or "**" costs no more than one of letters.
 */
export function parseInline(s) {
  const out = [];
  let text = '';
  const flush = () => {
    if (text) out.push({ type: 'text', text });
    text = '';
  };
  // next(token, from) is s.indexOf(token, from), remembered while it stays ahead.
  const seen = new Map();
  const next = (token, from) => {
    const c = seen.get(token);
    if (c && (c.at === -1 || (c.at >= from && c.from <= from))) return c.at;
    const at = s.indexOf(token, from);
    seen.set(token, { from, at });
    return at;
  };
  for (let i = 0; i < s.length; ) {
    const ch = s[i];
    if (ch === '*' && s[i + 1] === '*') {
      const end = next('**', i + 2);
      if (end > i + 2) {
        flush();
        out.push({ type: 'strong', children: parseInline(s.slice(i + 2, end)) });
        i = end + 2;
        continue;
      }
    } else if (ch === '`') {
      const end = next('`', i + 1);
      if (end > i + 1) {
        flush();
        out.push({ type: 'code', text: s.slice(i + 1, end) });
        i = end + 1;
        continue;
      }
    } else if (ch === '[') {
      // [text](url): text up to the first "]", then "(", a url without spaces or
      // parentheses, ")".
      const close = next(']', i + 1);
      if (close > i + 1 && s[close + 1] === '(') {
        let j = close + 2;
        while (j < s.length && s[j] !== ')' && s[j] !== '(' && !/\s/.test(s[j])) j++;
        if (s[j] === ')' && j > close + 2) {
          flush();
          out.push({ type: 'link', href: s.slice(close + 2, j), children: parseInline(s.slice(i + 1, close)) });
          i = j + 1;
          continue;
        }
      }
    }
    text += ch;
    i++;
  }
  flush();
  return out;
}
