// Unit tests of what a form that is a view of a tool says (widget/forms.js): node --test server/web/test/
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';

import { LOCAL_TOOLS, MAX_MESSAGE_CHARS, MAX_RESUME_MESSAGES, MAX_SAVE_CHARS, MAX_SAVE_MESSAGES, MAX_URL_CHARS } from '../widget/core.js';
import { argsOf, formAttributes, paramAttributes } from '../widget/forms.js';

const search = {
  name: 'search_site',
  description: 'Search this website.',
  inputSchema: {
    type: 'object',
    properties: {
      query: { type: 'string', minLength: 1, maxLength: 300, description: 'What to look for.' },
      limit: { type: 'integer', minimum: 1, maximum: 20 },
      mode: { type: 'string', enum: ['full', 'instant'] },
    },
    required: ['query'],
  },
};

describe('a view of a tool', () => {
  it('is named and described by the tool, and submitted by the agent', () => {
    assert.deepEqual(formAttributes(search), { toolname: 'search_site', tooldescription: 'Search this website.', toolautosubmit: '' });
  });
  it('has fields that say what the parameters say', () => {
    assert.deepEqual(paramAttributes(search, 'query'), { toolparamdescription: 'What to look for.', maxlength: '300', required: '' });
    assert.deepEqual(paramAttributes(search, 'limit'), { toolparamdescription: null, maxlength: null, required: null });
    assert.deepEqual(paramAttributes(search, 'query', true).maxlength, null, 'a <select> has no maxlength');
    for (const name of ['q', '__proto__', 'constructor', 'toString']) assert.equal(paramAttributes(search, name), null, name);
    assert.equal(paramAttributes({ name: 'x', description: '' }, 'query'), null);
  });
  it('passes what the agent filled in, numbers as numbers', () => {
    assert.deepEqual(argsOf(search, { query: 'audit', limit: '3', mode: 'full' }), { query: 'audit', limit: 3, mode: 'full' });
    assert.deepEqual(argsOf(search, { query: '', limit: '' }), { query: '' });
    assert.deepEqual(argsOf(search, { limit: 'three' }), { limit: 'three' }, 'the registry says what is wrong');
    assert.deepEqual(argsOf(undefined, { query: 'x' }), { query: 'x' });
  });
});

describe('the browser-local tools', () => {
  it('are local-tools.json, the file the pages are rendered from too', () => {
    const file = JSON.parse(readFileSync(new URL('../widget/local-tools.json', import.meta.url), 'utf8'));
    assert.deepEqual(LOCAL_TOOLS, file.tools);
  });
  it('state the caps the code keeps', () => {
    const save = LOCAL_TOOLS.find((t) => t.name === 'save_conversation');
    assert.match(save.description, new RegExp(`At most ${MAX_SAVE_MESSAGES} messages, ${MAX_MESSAGE_CHARS} characters each, ${MAX_SAVE_CHARS} in all`));
    assert.equal(MAX_RESUME_MESSAGES, 50);
    assert.equal(MAX_URL_CHARS, 2048);
    const prefill = LOCAL_TOOLS.find((t) => t.name === 'prefill_contact_form');
    assert.deepEqual(Object.keys(prefill.inputSchema.properties), ['name', 'email', 'organisation', 'topic', 'message']);
    for (const [name, p] of Object.entries(prefill.inputSchema.properties)) {
      assert.ok(p.description && Number.isInteger(p.maxLength), `${name}: a description and a cap, for its field`);
    }
    assert.equal(prefill.inputSchema.required, undefined, 'the visitor fills what sending needs, not the agent');
  });
});
