// The small part of Markdown that chat answers use — paragraphs, line breaks, bulleted
// and numbered lists, **bold**, `code` and [links](url) — parsed into a plain tree that
// chat.js turns into DOM nodes (never HTML strings). Anything else stays text.
//
// Time is linear in the input for every input: each line is read once from its end to
// note where the next "]", "`", "**" and end of a url are, and then once from its start,
// looking those up. Nothing is searched again from each of many starting points (a line
// of thousands of "[" before one "](" used to scan the url once per "["), and no regular
// expression can backtrack.

/**
 * work.steps counts the characters the parser has looked at, native string operations
 * included, since the module was loaded: the tests hold it to a small multiple of the
 * input's length, for every shape of input, without timing anything.
 */
export const work = { steps: 0 };

/**
 * parseMarkdown returns blocks: {type: 'p', lines: [inlines…]} or
 * {type: 'ul' | 'ol', start, items: [[inlines…]…]}, where each item or line is a list of
 * inlines: {type: 'text', text}, {type: 'strong', children}, {type: 'code', text},
 * {type: 'link', href, children}, {type: 'br'}.
 */
export function parseMarkdown(src) {
  const text = String(src).replace(/\r\n?/g, '\n');
  work.steps += 2 * text.length; // the replace and the split
  const blocks = [];
  let cur = null;
  for (const raw of text.split('\n')) {
    const line = raw.trimEnd();
    const body = line.trimStart();
    work.steps += raw.length;
    if (body === '') {
      cur = null;
      continue;
    }
    const li = listItem(line);
    if (li) {
      if (!cur || cur.type !== li.type) {
        cur = { type: li.type, items: [] };
        if (li.type === 'ol') cur.start = li.start;
        blocks.push(cur);
      }
      cur.items.push(parseInline(li.text));
      continue;
    }
    if (cur && (cur.type === 'ol' || cur.type === 'ul') && isSpace(line.charCodeAt(0))) {
      // An indented line continues the list item.
      const item = cur.items[cur.items.length - 1];
      item.push({ type: 'br' });
      for (const n of parseInline(body)) item.push(n);
      continue;
    }
    if (!cur || cur.type !== 'p') {
      cur = { type: 'p', lines: [] };
      blocks.push(cur);
    }
    cur.lines.push(parseInline(body));
  }
  return blocks;
}

/**
 * listItem reads a line (without trailing white space) as a list item, as
 * /^\s{0,3}(\d{1,9})[.)]\s+(.*)$/ and then /^\s{0,3}[-*+]\s+(.*)$/ would: at most three
 * white-space characters, the marker, white space, and text that holds no U+2028 or
 * U+2029 (which "." does not match). Those expressions retry every split of a long run
 * of white space before such a character, which is quadratic; this reads it once.
 */
function listItem(line) {
  work.steps += line.length;
  let i = 0;
  while (isSpace(line.charCodeAt(i))) i++;
  if (i > 3) return null;
  const at = i;
  let type;
  let start;
  while (i - at < 10 && isDigit(line.charCodeAt(i))) i++;
  if (i > at) {
    if (i - at > 9 || (line[i] !== '.' && line[i] !== ')')) return null;
    type = 'ol';
    start = Number(line.slice(at, i));
  } else if (line[i] === '-' || line[i] === '*' || line[i] === '+') {
    type = 'ul';
  } else {
    return null;
  }
  const gap = ++i;
  while (isSpace(line.charCodeAt(i))) i++;
  if (i === gap) return null;
  for (let j = i; j < line.length; j++) {
    const c = line.charCodeAt(j);
    if (c === 0x2028 || c === 0x2029) return null;
  }
  return { type, start, text: line.slice(i) };
}

/**
 * parseInline parses **bold**, `code` and [text](url) in one line. Each construct runs
 * to the first closer after its opener: "**" to the next "**", "`" to the next "`", and
 * "[" to the next "]", which "(", a url without white space or parentheses and ")" must
 * follow. Markup that is not closed so stays text.
 */
export function parseInline(s) {
  s = String(s);
  const n = s.length;
  // For each position, the first at or after it of "]", "`", "**", and of "(", ")" or
  // white space (what ends a url); n where there is none. Two more entries at the end
  // let lookups start one past a closer at the end of the line.
  const next = {
    close: new Int32Array(n + 2).fill(n),
    tick: new Int32Array(n + 2).fill(n),
    stars: new Int32Array(n + 2).fill(n),
    stop: new Int32Array(n + 2).fill(n),
  };
  for (let i = n - 1; i >= 0; i--) {
    const c = s.charCodeAt(i);
    next.close[i] = c === 93 ? i : next.close[i + 1];
    next.tick[i] = c === 96 ? i : next.tick[i + 1];
    next.stars[i] = c === 42 && s.charCodeAt(i + 1) === 42 ? i : next.stars[i + 1];
    next.stop[i] = c === 40 || c === 41 || isSpace(c) ? i : next.stop[i + 1];
  }
  work.steps += 5 * (n + 2);
  return inlines(s, 0, n, next);
}

// inlines parses s[from, to). A construct's children are parsed as their own range and
// skipped by the caller, so each character is looked at once per level of nesting, and
// there are at most three (a link in bold, or bold in a link, with code inside).
function inlines(s, from, to, next) {
  const out = [];
  let text = from; // where the text not yet pushed begins
  const flush = (end) => {
    if (end > text) out.push({ type: 'text', text: s.slice(text, end) });
  };
  let i = from;
  let steps = 0;
  while (i < to) {
    steps++;
    const c = s.charCodeAt(i);
    if (c === 42 && i + 1 < to && s.charCodeAt(i + 1) === 42) {
      const end = next.stars[i + 2];
      if (end > i + 2 && end + 1 < to) {
        flush(i);
        out.push({ type: 'strong', children: inlines(s, i + 2, end, next) });
        text = i = end + 2;
        continue;
      }
    } else if (c === 96) {
      const end = next.tick[i + 1];
      if (end > i + 1 && end < to) {
        flush(i);
        out.push({ type: 'code', text: s.slice(i + 1, end) });
        text = i = end + 1;
        continue;
      }
    } else if (c === 91) {
      const close = next.close[i + 1];
      if (close > i + 1 && close + 1 < to && s.charCodeAt(close + 1) === 40) {
        const end = next.stop[close + 2];
        if (end > close + 2 && end < to && s.charCodeAt(end) === 41) {
          flush(i);
          out.push({ type: 'link', href: s.slice(close + 2, end), children: inlines(s, i + 1, close, next) });
          text = i = end + 1;
          continue;
        }
      }
    }
    i++;
  }
  flush(to);
  work.steps += steps;
  return out;
}

function isDigit(c) {
  return c >= 48 && c <= 57;
}

/** isSpace is /\s/ for one UTF-16 code unit (NaN, past the end, is not): the set trim removes. */
export function isSpace(c) {
  if (c <= 32) return c === 32 || (c >= 9 && c <= 13);
  if (c < 160) return false;
  return (
    c === 160 ||
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}
