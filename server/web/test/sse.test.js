// Unit tests of the chat flyout's event-stream parser: node --test server/web/test/
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { createSSEParser, readEventStream } from '../widget/sse.js';

function parseChunks(chunks) {
  const events = [];
  const p = createSSEParser((e) => events.push(e));
  for (const c of chunks) p.push(c);
  p.end();
  return events;
}

const stream =
  'event: message.delta\ndata: {"text":"Hel"}\n\n' +
  ': a comment\n' +
  'event: message.delta\r\ndata: {"text":"lo"}\r\n\r\n' +
  'event: sources\rdata: {"items":[]}\r\r' +
  'data: line one\ndata:line two\n\n' +
  'event: message.done\ndata: {"usage":{}}\n\n';

const want = [
  { event: 'message.delta', data: '{"text":"Hel"}' },
  { event: 'message.delta', data: '{"text":"lo"}' },
  { event: 'sources', data: '{"items":[]}' },
  { event: 'message', data: 'line one\nline two' },
  { event: 'message.done', data: '{"usage":{}}' },
];

describe('createSSEParser', () => {
  it('parses a whole stream', () => {
    assert.deepEqual(parseChunks([stream]), want);
  });
  it('gives the same events however the stream is split', () => {
    for (let size = 1; size <= 7; size++) {
      const chunks = [];
      for (let i = 0; i < stream.length; i += size) chunks.push(stream.slice(i, i + size));
      assert.deepEqual(parseChunks(chunks), want, `chunks of ${size}`);
    }
  });
  it('drops an event the stream did not finish', () => {
    assert.deepEqual(parseChunks(['event: error\ndata: {"code":"x"}']), []);
  });
  it('ignores events without data', () => {
    assert.deepEqual(parseChunks(['event: ping\n\n']), []);
  });
});

describe('readEventStream', () => {
  it('decodes UTF-8 split inside a character', async () => {
    const bytes = new TextEncoder().encode('event: message.delta\ndata: {"text":"Grüße 👋"}\n\n');
    const body = new ReadableStream({
      start(c) {
        for (const b of bytes) c.enqueue(new Uint8Array([b]));
        c.close();
      },
    });
    const events = [];
    await readEventStream(body, (e) => events.push(e));
    assert.deepEqual(events, [{ event: 'message.delta', data: '{"text":"Grüße 👋"}' }]);
  });
});
