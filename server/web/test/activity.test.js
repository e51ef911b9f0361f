// Unit tests of the tool activity's words and of what it reads back from storage:
// node --test server/web/test/
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { labelOf, storedActivity } from '../widget/activity.js';
import { stringsFor } from '../widget/strings.js';

describe('labelOf', () => {
  it('has words of their own for the site tools, generic ones for any other', () => {
    const en = stringsFor('en');
    assert.equal(labelOf(en, 'search_site', 'running'), 'Searching the site…');
    assert.equal(labelOf(en, 'search_site', 'done'), 'Searched the site');
    assert.equal(labelOf(en, 'custom_tool', 'failed'), en.toolFailed);
    // A tool named like an Object.prototype key is any other tool.
    assert.equal(labelOf(en, 'constructor', 'done'), en.toolDone);
    const de = stringsFor('de');
    for (const state of ['running', 'done', 'failed']) {
      for (const tool of ['search_site', 'get_page', 'get_free_slots', 'other']) assert.ok(labelOf(de, tool, state), `${tool} ${state}`);
    }
  });
});

describe('storedActivity', () => {
  it('keeps the well-formed entries only, at most 16', () => {
    const good = { name: 'search_site', ok: true };
    assert.deepEqual(storedActivity(undefined), []);
    assert.deepEqual(storedActivity('search_site'), []);
    assert.deepEqual(storedActivity({ 0: good, length: 1 }), []);
    assert.deepEqual(
      storedActivity([good, null, 7, { name: '', ok: true }, { name: 'x'.repeat(65), ok: false }, { name: 'get_page', ok: 'yes' }, { name: 'get_page', ok: false }]),
      [good, { name: 'get_page', ok: false }],
    );
    assert.equal(storedActivity(Array.from({ length: 40 }, () => good)).length, 16);
  });
});
