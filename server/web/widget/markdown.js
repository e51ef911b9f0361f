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
    const line = raw.replace(/\s+$/, '');
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

/** parseInline parses **bold**, `code` and [text](url) in one line. */
export function parseInline(s) {
  const out = [];
  let text = '';
  const flush = () => {
    if (text) out.push({ type: 'text', text });
    text = '';
  };
  for (let i = 0; i < s.length; ) {
    if (s.startsWith('**', i)) {
      const end = s.indexOf('**', i + 2);
      if (end > i + 2) {
        flush();
        out.push({ type: 'strong', children: parseInline(s.slice(i + 2, end)) });
        i = end + 2;
        continue;
      }
    }
    if (s[i] === '`') {
      const end = s.indexOf('`', i + 1);
      if (end > i + 1) {
        flush();
        out.push({ type: 'code', text: s.slice(i + 1, end) });
        i = end + 1;
        continue;
      }
    }
    if (s[i] === '[') {
      const m = /^\[([^\]]+)\]\(([^()\s]+)\)/.exec(s.slice(i));
      if (m) {
        flush();
        out.push({ type: 'link', href: m[2], children: parseInline(m[1]) });
        i += m[0].length;
        continue;
      }
    }
    text += s[i];
    i++;
  }
  flush();
  return out;
}
