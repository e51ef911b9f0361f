// Tool activity in the chat: each tool call of a turn is one compact line in the visitor's
// language ("Searched the site"), busy while it runs, folded: a <details> whose summary is
// the line and whose body names the tool and its status. Presentation only: nothing of it
// is ever sent to the model, and a failed call says that it failed, never why.
import { h } from './dom.js';
import { fill } from './strings.js';

// The tools whose lines have words of their own, by the prefix of their string keys; any
// other tool gets the generic words (tool…).
const KINDS = { search_site: 'search', get_page: 'page', get_free_slots: 'slots' };

const MARKS = { running: '…', done: '✓', failed: '✕' };

/** capital is s with its first letter in upper case: a state's part of a string key. */
const capital = (s) => s[0].toUpperCase() + s.slice(1);

/** labelOf is the line's words for a call of tool in state (running, done or failed). */
export function labelOf(t, tool, state) {
  const kind = Object.hasOwn(KINDS, tool) ? KINDS[tool] : 'tool';
  return t[`${kind}${capital(state)}`];
}

/** activityLine is a new line for a call of tool, in state. */
export function activityLine(t, tool, state) {
  const li = h(
    'li',
    { class: 'tool', part: 'tool' },
    h(
      'details',
      {},
      h('summary', {}, h('span', { class: 'tool-mark', 'aria-hidden': 'true' }), h('span', { class: 'tool-label' })),
      h('p', { class: 'tool-detail' }),
    ),
  );
  setActivity(t, li, tool, state);
  return li;
}

/** setActivity puts line (from activityLine) in state. */
export function setActivity(t, line, tool, state) {
  const label = labelOf(t, tool, state);
  line.dataset.state = state;
  if (state === 'running') line.setAttribute('aria-busy', 'true');
  else line.removeAttribute('aria-busy');
  line.querySelector('.tool-mark').textContent = MARKS[state];
  line.querySelector('.tool-label').textContent = label;
  line.querySelector('.tool-detail').textContent = fill(t.toolDetail, { name: tool, status: t[`status${capital(state)}`] });
}

/**
 * storedActivity is the valid entries of an answer's stored `tools` ([{name, ok}]): what
 * another page of this browser wrote may be anything.
 */
export function storedActivity(list) {
  if (!Array.isArray(list)) return [];
  return list
    .filter((x) => x && typeof x.name === 'string' && x.name.length > 0 && x.name.length <= 64 && typeof x.ok === 'boolean')
    .slice(0, 16);
}
