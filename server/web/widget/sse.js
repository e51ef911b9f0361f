// A parser for text/event-stream (the HTML standard's rules): bytes in, events out.
// It takes decoded text in chunks of any size, split anywhere, and calls onEvent with
// {event, data} for every complete event; data lines are joined with "\n".

export function createSSEParser(onEvent) {
  let buffer = '';
  let eventType = '';
  let data = [];
  let pendingCR = false;

  const dispatch = () => {
    if (data.length) onEvent({ event: eventType || 'message', data: data.join('\n') });
    eventType = '';
    data = [];
  };

  const line = (l) => {
    if (l === '') return dispatch();
    if (l.startsWith(':')) return undefined; // a comment
    const colon = l.indexOf(':');
    const field = colon === -1 ? l : l.slice(0, colon);
    let value = colon === -1 ? '' : l.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') eventType = value;
    else if (field === 'data') data.push(value);
    // id and retry do not matter to a stream that is never resumed.
    return undefined;
  };

  return {
    push(chunk) {
      let text = chunk;
      // A "\r\n" split between two chunks is one line break, not two.
      if (pendingCR && text.startsWith('\n')) text = text.slice(1);
      pendingCR = false;
      buffer += text;
      let start = 0;
      for (let i = 0; i < buffer.length; i++) {
        const c = buffer[i];
        if (c !== '\n' && c !== '\r') continue;
        line(buffer.slice(start, i));
        if (c === '\r') {
          if (i + 1 < buffer.length) {
            if (buffer[i + 1] === '\n') i++;
          } else {
            pendingCR = true;
          }
        }
        start = i + 1;
      }
      buffer = buffer.slice(start);
    },
    /** end drops an event the stream did not close with a blank line, as the standard says. */
    end() {
      buffer = '';
      eventType = '';
      data = [];
    },
  };
}

/**
 * readEventStream reads a fetch Response body as server-sent events, calling onEvent for
 * each until the stream ends.
 */
export async function readEventStream(body, onEvent) {
  const parser = createSSEParser(onEvent);
  const reader = body.getReader();
  const decoder = new TextDecoder();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    parser.push(decoder.decode(value, { stream: true }));
  }
  parser.push(decoder.decode());
  parser.end();
}
